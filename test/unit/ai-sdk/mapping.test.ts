/** The chunk ↔ event mapping of docs/protocol.md §9, and the message fold, against the AI SDK itself. */
import fc from 'fast-check';
import type { UIMessageChunk } from 'ai';
import { describe, expect, it } from 'vitest';
import { createChunkLogger, createChunkReplayer, type LoggedChunk } from '../../../src/protocol/ai-sdk/mapping.js';
import { buildUIMessage } from '../../../src/protocol/ai-sdk/ui-message.js';
import { reduceEvents, turnText } from '../../../src/core/turn-reducer.js';
import { turnParts } from '../../../src/core/turn-read.js';
import type { TurnEvent } from '../../../src/protocol/schemas.js';
import { anyChunk, referenceMessage, validStream } from './chunks.js';

const TURN = 'turn_mapping_000000001';
type Chunk = Record<string, unknown>;

/** JSON as the wire carries it: undefined members gone. */
const wire = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** The server half: chunks → logged events (turn.start first, turn.end last). */
function logChunks(chunks: readonly Chunk[], status: 'complete' | 'failed' | 'cancelled' = 'complete'): TurnEvent[] {
  const log = createChunkLogger(TURN);
  const events: TurnEvent[] = [{ turnId: TURN, seq: 1, type: 'turn.start', messageId: 'm1', conversationId: 'c1', createdAt: '2025-01-01T00:00:00.000Z' }];
  for (const chunk of chunks) {
    const logged: LoggedChunk = log(chunk as UIMessageChunk);
    if (logged) events.push(wire({ ...logged, turnId: TURN, seq: events.length + 1 }) as TurnEvent);
  }
  const text = events.map((event) => (event.type === 'delta' ? event.text : '')).join('');
  events.push({ turnId: TURN, seq: events.length + 1, type: 'turn.end', status, textLength: text.length, textSha256: '0'.repeat(64) });
  return events;
}

/** The client half, from events. */
function replayEvents(events: readonly TurnEvent[]): Chunk[] {
  const out: Chunk[] = [];
  const replayer = createChunkReplayer(TURN, (chunk) => out.push(chunk as unknown as Chunk));
  for (const event of events) {
    if (event.type === 'delta') replayer.delta(event);
    else if (event.type === 'part') replayer.part(event.part);
    else if (event.type === 'turn.end') replayer.end(event);
  }
  return out;
}

/** The chunks with every text-delta that names no open text part left out (the AI SDK refuses those). */
function withoutOrphanDeltas(chunks: readonly Chunk[]): Chunk[] {
  const open = new Set<unknown>();
  return chunks.filter((chunk) => {
    if (chunk.type === 'text-start') open.add(chunk.id);
    else if (chunk.type === 'text-end') open.delete(chunk.id);
    return chunk.type !== 'text-delta' || open.has(chunk.id);
  });
}

/** The client half, from a snapshot's parts (what a stream opened mid-turn or after reload replays). */
function replaySnapshot(events: readonly TurnEvent[]): Chunk[] {
  const out: Chunk[] = [];
  const replayer = createChunkReplayer(TURN, (chunk) => out.push(chunk as unknown as Chunk));
  const state = reduceEvents(TURN, events);
  replayer.parts(turnParts(state));
  if (state.end) replayer.end(state.end);
  return out;
}

const ENDINGS = ['finish', 'error', 'abort'];

describe('chunk → event', () => {
  const log = (chunks: Chunk[]) => {
    const logger = createChunkLogger(TURN);
    return chunks.map((chunk) => logger(chunk as UIMessageChunk));
  };

  it('logs a text-delta of the open text part as a delta, and every other chunk as a part as produced', () => {
    const chunks: Chunk[] = [
      { type: 'start' },
      { type: 'start-step' },
      { type: 'reasoning-start', id: 'r' },
      { type: 'reasoning-delta', id: 'r', delta: 'hm' },
      { type: 'reasoning-end', id: 'r' },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'Hi' },
      { type: 'text-delta', id: 't', delta: '!', providerMetadata: { p: { x: 1 } } },
      { type: 'text-delta', id: 'other', delta: 'x' },
      { type: 'text-end', id: 't' },
      { type: 'text-delta', id: 't', delta: 'late' },
      { type: 'tool-input-start', toolCallId: 'c', toolName: 'w' },
      { type: 'tool-input-delta', toolCallId: 'c', inputTextDelta: '{}' },
      { type: 'tool-input-available', toolCallId: 'c', toolName: 'w', input: {} },
      { type: 'tool-input-error', toolCallId: 'c', toolName: 'w', input: {}, errorText: 'bad' },
      { type: 'tool-approval-request', approvalId: 'a', toolCallId: 'c' },
      { type: 'tool-approval-response', approvalId: 'a', approved: true },
      { type: 'tool-output-available', toolCallId: 'c', output: 1 },
      { type: 'tool-output-error', toolCallId: 'c', errorText: 'e' },
      { type: 'tool-output-denied', toolCallId: 'c' },
      { type: 'source-url', sourceId: 's', url: 'https://x/' },
      { type: 'source-document', sourceId: 'd', mediaType: 'text/plain', title: 'T' },
      { type: 'file', url: 'data:,', mediaType: 'text/plain' },
      { type: 'reasoning-file', url: 'data:,', mediaType: 'text/plain' },
      { type: 'custom', kind: 'x', value: 1 },
      { type: 'reset-step' },
      { type: 'data-w', id: 'w', data: 1 },
      { type: 'data-w', data: 2, transient: false },
      { type: 'message-metadata', messageMetadata: { a: 1 } },
      { type: 'finish-step' },
      { type: 'finish', finishReason: 'stop' },
      { type: 'error', errorText: 'e' },
      { type: 'abort' },
    ];
    const logged = log(chunks);
    expect(logged[0]).toEqual({ type: 'part', part: { type: 'start', messageId: TURN } });
    // Every text-delta is a delta, whichever part it names, its metadata kept (protocol 1.2).
    const deltas: Record<number, LoggedChunk> = {
      6: { type: 'delta', text: 'Hi', partId: 't' },
      7: { type: 'delta', text: '!', partId: 't', providerMetadata: { p: { x: 1 } } },
      8: { type: 'delta', text: 'x', partId: 'other' },
      10: { type: 'delta', text: 'late', partId: 't' },
    };
    logged.forEach((event, i) => {
      if (i !== 0) expect(event).toEqual(deltas[i] ?? { type: 'part', part: chunks[i] });
    });
  });

  it('logs a malformed text-delta as a part, as produced', () => {
    const odd = [{ type: 'text-delta', id: 't', delta: 5 }, { type: 'text-delta', delta: 'x' }, { type: 'text-delta', id: 't', delta: 'x', providerMetadata: [1] }];
    expect(log(odd)).toEqual(odd.map((part) => ({ type: 'part', part })));
  });

  it('gives a continuation\'s start chunk the id of the message it continues', () => {
    const logger = createChunkLogger('msg_continued');
    expect(logger({ type: 'start', messageId: TURN } as UIMessageChunk)).toEqual({ type: 'part', part: { type: 'start', messageId: 'msg_continued' } });
    const out: Chunk[] = [];
    const replayer = createChunkReplayer(TURN, (chunk) => out.push(chunk as unknown as Chunk), 'msg_continued');
    replayer.delta({ text: 'a' });
    replayer.part({ type: 'start', messageId: TURN });
    expect(out.filter((chunk) => chunk.type === 'start')).toEqual([{ type: 'start', messageId: 'msg_continued' }, { type: 'start', messageId: 'msg_continued' }]);
    // Without one given, the logged start's id holds: a continuation's log replays onto the message it continues.
    const own: Chunk[] = [];
    const plain = createChunkReplayer(TURN, (chunk) => own.push(chunk as unknown as Chunk));
    plain.part({ type: 'start', messageId: 'msg_continued' });
    plain.part({ type: 'start' });
    expect(own).toEqual([{ type: 'start', messageId: 'msg_continued' }, { type: 'start', messageId: TURN }]);
  });

  it('replaces a start chunk message id with the turn id, and logs no transient data chunk', () => {
    expect(log([{ type: 'start', messageId: 'mine', messageMetadata: { m: 1 } }])).toEqual([{ type: 'part', part: { type: 'start', messageId: TURN, messageMetadata: { m: 1 } } }]);
    expect(log([{ type: 'data-progress', data: 50, transient: true }])).toEqual([undefined]);
  });
});

describe('event → chunk', () => {
  it('gives a plain-text turn a start, one implicit text part per run of deltas, and the end chunk of its status', () => {
    const plain = (status: 'complete' | 'failed' | 'cancelled', error?: { code: string; message: string }) => {
      const events: TurnEvent[] = [
        { turnId: TURN, seq: 1, type: 'delta', text: 'a' },
        { turnId: TURN, seq: 2, type: 'delta', text: '' },
        { turnId: TURN, seq: 3, type: 'delta', text: 'b' },
        { turnId: TURN, seq: 4, type: 'part', part: { type: 'data-x', data: 1 } },
        { turnId: TURN, seq: 5, type: 'delta', text: 'c' },
        { turnId: TURN, seq: 6, type: 'turn.end', status, textLength: 3, textSha256: '0'.repeat(64), ...(error && { error }) },
      ];
      return [replayEvents(events), replaySnapshot(events)];
    };
    const body = [
      { type: 'start', messageId: TURN },
      { type: 'text-start', id: `${TURN}-text-0` },
      { type: 'text-delta', id: `${TURN}-text-0`, delta: 'a' },
      // An empty delta with no explicit text part open changes nothing and is dropped.
      { type: 'text-delta', id: `${TURN}-text-0`, delta: 'b' },
      { type: 'text-end', id: `${TURN}-text-0` },
      { type: 'data-x', data: 1 },
      { type: 'text-start', id: `${TURN}-text-1` },
      { type: 'text-delta', id: `${TURN}-text-1`, delta: 'c' },
      { type: 'text-end', id: `${TURN}-text-1` },
    ];
    const [events, snapshot] = plain('complete');
    expect(events).toEqual([...body, { type: 'finish' }]);
    // The snapshot holds the text, not its deltas: one delta per text part.
    expect(snapshot).toEqual([...body.slice(0, 2), { type: 'text-delta', id: `${TURN}-text-0`, delta: 'ab' }, ...body.slice(4), { type: 'finish' }]);
    expect(plain('cancelled')[0]!.at(-1)).toEqual({ type: 'abort' });
    expect(plain('failed', { code: 'agent_failed', message: 'The agent failed.' })[0]!.at(-1)).toEqual({ type: 'error', errorText: 'The agent failed.' });
    expect(plain('failed')[1]!.at(-1)).toEqual({ type: 'error', errorText: 'The turn failed.' });
  });
});

describe('text deltas (W3: every delta is in the text, its proof and its part)', () => {
  const chunks: Chunk[] = [
    { type: 'start' },
    { type: 'text-start', id: 't' },
    { type: 'text-delta', id: 't', delta: 'The answer ' },
    { type: 'text-delta', id: 't', delta: 'is ', providerMetadata: { mock: { cached: true } } },
    { type: 'text-delta', id: 't', delta: '42.' },
    { type: 'text-end', id: 't' },
    { type: 'finish', finishReason: 'stop' },
  ];

  it('logs a text-delta with providerMetadata as a delta, counted in the text, and rebuilds it in order', async () => {
    const events = logChunks(chunks);
    const deltas = events.filter((event) => event.type === 'delta');
    expect(deltas.map((event) => event.text).join('')).toBe('The answer is 42.');
    expect(deltas[1]).toMatchObject({ partId: 't', providerMetadata: { mock: { cached: true } } });
    const state = reduceEvents(TURN, events);
    expect(turnText(state)).toBe('The answer is 42.');
    expect(state.textLength).toBe('The answer is 42.'.length);
    const reference = await referenceMessage(chunks.map((chunk) => (chunk.type === 'start' ? { ...chunk, messageId: TURN } : chunk)));
    expect(reference?.parts).toEqual([{ type: 'text', text: 'The answer is 42.', state: 'done', providerMetadata: { mock: { cached: true } } }]);
    expect(await referenceMessage(replayEvents(events))).toEqual(reference);
    expect(await referenceMessage(replaySnapshot(events))).toEqual(reference);
    expect(buildUIMessage('x', replaySnapshot(events) as unknown as UIMessageChunk[])).toEqual(reference);
  });

  it('puts a delta naming no open part in an implicit part, where it came', () => {
    const events = logChunks([{ type: 'text-start', id: 'p' }, { type: 'text-delta', id: 'p', delta: 'a' }, { type: 'text-end', id: 'p' }, { type: 'text-delta', id: 'p', delta: 'b' }, { type: 'data-x', data: 1 }, { type: 'text-delta', id: 'q', delta: 'c' }]);
    const expected = [
      { type: 'start', messageId: TURN },
      { type: 'text-start', id: 'p' },
      { type: 'text-delta', id: 'p', delta: 'a' },
      { type: 'text-end', id: 'p' },
      { type: 'text-start', id: `${TURN}-text-0` },
      { type: 'text-delta', id: `${TURN}-text-0`, delta: 'b' },
      { type: 'text-end', id: `${TURN}-text-0` },
      { type: 'data-x', data: 1 },
      { type: 'text-start', id: `${TURN}-text-1` },
      { type: 'text-delta', id: `${TURN}-text-1`, delta: 'c' },
      { type: 'text-end', id: `${TURN}-text-1` },
      { type: 'finish' },
    ];
    expect(replayEvents(events)).toEqual(expected);
    expect(replaySnapshot(events)).toEqual(expected);
  });
});

describe('round trips', () => {
  it('any chunk sequence comes back as produced (start with the turn id, no transient data, an end chunk added when missing)', () => {
    fc.assert(
      fc.property(fc.array(anyChunk, { maxLength: 30 }), fc.constantFrom('complete' as const, 'failed' as const, 'cancelled' as const), (input, status) => {
        const chunks = withoutOrphanDeltas(wire(input));
        const expected = chunks.filter((chunk) => !(String(chunk.type).startsWith('data-') && chunk.transient === true)).map((chunk) => (chunk.type === 'start' ? { ...chunk, messageId: TURN } : chunk));
        if (expected[0]?.type !== 'start') expected.unshift({ type: 'start', messageId: TURN });
        if (!expected.some((chunk) => ENDINGS.includes(chunk.type as string))) {
          expected.push(status === 'complete' ? { type: 'finish' } : status === 'cancelled' ? { type: 'abort' } : { type: 'error', errorText: 'The turn failed.' });
        }
        expect(replayEvents(logChunks(chunks, status))).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('a valid stream, through the log and back by events or by snapshot, builds the message the AI SDK builds', async () => {
    await fc.assert(
      fc.asyncProperty(validStream, async (chunks) => {
        const reference = await referenceMessage(chunks.map((chunk) => (chunk.type === 'start' ? { ...chunk, messageId: TURN } : chunk)));
        const events = logChunks(chunks);
        expect(await referenceMessage(replayEvents(events))).toEqual(reference);
        expect(await referenceMessage(replaySnapshot(events))).toEqual(reference);
        // The fold loadMessages uses agrees with the AI SDK too.
        expect(buildUIMessage('x', replaySnapshot(events) as unknown as UIMessageChunk[])).toEqual(reference);
      }),
      { numRuns: 200 },
    );
  });
});
