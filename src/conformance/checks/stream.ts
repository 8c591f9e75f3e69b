/** Section 2: one followed turn, from its headers to its last event. */
import { createHash } from 'node:crypto';
import { CheckFailure, clip, expect, expectJsonEqual } from '../check.js';
import type { Check } from '../run-context.js';
import type { FollowStream } from '../event-stream.js';
import { expectedEvents, failScript, shapeScript } from '../script.js';
import { eventProblem, textOf, type WireEvent } from '../wire.js';

/** Messages without `id` a 1.1 server may send: heartbeats, and transient AI SDK chunks (§9). */
const UNNUMBERED = new Set(['heartbeat', 'transient']);

function expectStreamHeaders(stream: FollowStream): void {
  const type = (stream.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase();
  expect(type === 'text/event-stream', `Content-Type is ${JSON.stringify(stream.headers.get('content-type'))}, expected text/event-stream`);
  const cache = (stream.headers.get('cache-control') ?? '').toLowerCase();
  expect(/(^|[\s,])no-cache($|[\s,])/.test(cache), `Cache-Control is ${JSON.stringify(stream.headers.get('cache-control'))}, expected no-cache`);
  const buffering = stream.headers.get('x-accel-buffering');
  expect(buffering?.trim().toLowerCase() === 'no', `X-Accel-Buffering is ${JSON.stringify(buffering)}, expected no`);
}

/** The first framing problem of a stream's messages, or `undefined`. */
export function framingProblem(stream: FollowStream, turnId: string): string | undefined {
  if (stream.unterminated) return 'the stream ended inside an unterminated message';
  for (const [index, { item }] of stream.items.entries()) {
    if (item.kind === 'retry') continue;
    const where = `message ${index} (${clip(JSON.stringify(item), 120)})`;
    if (item.unknownFields.length > 0) return `${where} has unknown fields ${item.unknownFields.join(', ')}`;
    if (item.dataLines !== 1) return `${where} has ${item.dataLines} data lines, expected exactly one`;
    let data: unknown;
    try {
      data = JSON.parse(item.data);
    } catch {
      return `${where}: data is not JSON`;
    }
    if (item.id === undefined) {
      if (item.event === undefined || !UNNUMBERED.has(item.event)) return `${where} has no id line but is not a heartbeat or transient message`;
      continue;
    }
    const event = data as Partial<WireEvent> | null;
    if (!/^[0-9]{1,15}$/.test(item.id)) return `${where}: id ${JSON.stringify(item.id)} is not a decimal seq`;
    if (typeof event !== 'object' || event === null || Array.isArray(event)) return `${where}: data is not a JSON object`;
    if (String(event.seq) !== item.id) return `${where}: id ${item.id} differs from the data's seq ${JSON.stringify(event.seq)}`;
    if (item.event !== event.type) return `${where}: event ${JSON.stringify(item.event)} differs from the data's type ${JSON.stringify(event.type)}`;
    if (event.turnId !== turnId) return `${where}: turnId ${JSON.stringify(event.turnId)} is not ${turnId}`;
  }
  return undefined;
}

/** Fails unless `events` are seq 1…n in order with no gap, turn.start first, one turn.end last. */
export function expectWholeTurn(events: readonly WireEvent[], what: string): void {
  expect(events.length > 0, `${what}: no events`);
  events.forEach((event, index) => {
    expect(event.seq === index + 1, `${what}: event ${index + 1} has seq ${event.seq} (seqs ${events.map((e) => e.seq).join(',')})`);
  });
  expect(events[0]?.type === 'turn.start', `${what}: the first event is ${events[0]?.type}, not turn.start`);
  const ends = events.filter((event) => event.type === 'turn.end').length;
  expect(ends === 1 && events.at(-1)?.type === 'turn.end', `${what}: ${ends} turn.end events, expected exactly one, last`);
}

const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** Fails unless turn.end's textLength and textSha256 prove the delta text. */
export function expectIntegrity(events: readonly WireEvent[], what: string): string {
  const end = events.at(-1);
  expect(end?.type === 'turn.end', `${what}: no turn.end to check`);
  const text = textOf(events);
  expect(end['textLength'] === text.length, `${what}: textLength ${JSON.stringify(end['textLength'])}, but the deltas hold ${text.length} UTF-16 code units`);
  expect(end['textSha256'] === sha256Hex(text), `${what}: textSha256 ${JSON.stringify(end['textSha256'])} is not the SHA-256 of the deltas' text (${sha256Hex(text)})`);
  return `${text.length} code units, ${Buffer.byteLength(text)} UTF-8 bytes`;
}

const headers: Check = {
  id: 's2.stream-headers',
  title: 'a follow answers 200 with text/event-stream, Cache-Control: no-cache, X-Accel-Buffering: no',
  rule: '§2 "200 with Content-Type: text/event-stream, Cache-Control: no-cache, X-Accel-Buffering: no"',
  async run(context) {
    expectStreamHeaders((await context.turns.shape()).stream);
    return 'headers present';
  },
};

const retryFirst: Check = {
  id: 's2.retry-first',
  title: 'the stream starts with retry: <ms>',
  rule: '§2 "The stream starts with retry: <ms>"',
  async run(context) {
    const first = (await context.turns.shape()).stream.items[0]?.item;
    expect(first?.kind === 'retry', `the stream starts with ${clip(JSON.stringify(first))}, not a retry field`);
    expect(/^[0-9]+$/.test(first.value), `retry: ${JSON.stringify(first.value)} is not decimal milliseconds`);
    return `retry: ${first.value}`;
  },
};

const framing: Check = {
  id: 's2.framing',
  title: 'each event is one message: id = seq, event = type, one data line of JSON repeating turnId, seq, type',
  rule: '§2 "Each event is one SSE message whose id is the decimal seq, whose event is the type, and whose data is one line of JSON"',
  async run(context) {
    const turn = await context.turns.shape();
    const problem = framingProblem(turn.stream, turn.turnId);
    if (problem !== undefined) throw new CheckFailure(problem);
    return `${turn.stream.items.length} items`;
  },
};

const fields: Check = {
  id: 's2.event-fields',
  title: 'every event has the fields of its type (turn.start, delta, action, part, turn.end)',
  rule: '§2 table "type | fields besides turnId, seq, type"',
  async run(context) {
    const turn = await context.turns.shape();
    for (const event of turn.events) {
      const problem = eventProblem(event, turn.turnId);
      if (problem !== undefined) throw new CheckFailure(`seq ${event.seq}: ${problem}`);
    }
    const start = turn.events[0];
    expect(start?.['messageId'] === turn.messageId, `turn.start messageId ${JSON.stringify(start?.['messageId'])} is not the submit answer's ${turn.messageId}`);
    expect(start['conversationId'] === turn.conversationId, `turn.start conversationId ${JSON.stringify(start['conversationId'])} is not ${turn.conversationId}`);
    return [...new Set(turn.events.map((event) => event.type))].join(', ');
  },
};

const seqs: Check = {
  id: 's2.seq-contiguous',
  title: 'seqs are 1…n in order with no gap; turn.start first, exactly one turn.end last',
  rule: 'Words "numbered by seq = 1, 2, 3 … with no gaps. A turn ends with exactly one turn.end"',
  async run(context) {
    const turn = await context.turns.shape();
    expectWholeTurn(turn.events, 'the stream');
    return `seq 1…${turn.events.length}`;
  },
};

const closes: Check = {
  id: 's2.closes-after-end',
  title: 'the stream closes after turn.end',
  rule: '§2 "then closes after turn.end"',
  async run(context) {
    const turn = await context.turns.shape();
    expect(turn.stream.ended, 'the stream did not end by itself');
    const lastWithId = [...turn.stream.items].reverse().find(({ item }) => item.kind === 'message' && item.id !== undefined);
    expect(lastWithId?.item.kind === 'message' && lastWithId.item.event === 'turn.end', 'the last numbered message before the close is not turn.end');
    return 'closed';
  },
};

const integrity: Check = {
  id: 's2.integrity',
  title: 'turn.end textLength (UTF-16 code units) and textSha256 (hex) match the concatenated delta text',
  rule: '§2 turn.end "length in UTF-16 code units and SHA-256 (hex) of the whole assistant text"',
  async run(context) {
    return expectIntegrity((await context.turns.shape()).events, 'the shape turn');
  },
};

const script: Check = {
  id: 's2.agent-events',
  title: 'the conformance agent\'s steps come back as events, in order, with their fields (delta, action, part)',
  rule: '§2 table (part: "logged and replayed like every event"); docs/conformance.md',
  async run(context) {
    await context.turns.requireAgent();
    const turn = await context.turns.shape();
    const expected = expectedEvents(shapeScript(context.options.runId));
    const middle = turn.events.slice(1, -1).map(({ turnId: _turnId, seq: _seq, ...rest }) => rest);
    expectJsonEqual(middle, expected.events, 'the events between turn.start and turn.end');
    expect(turn.events.at(-1)?.['status'] === 'complete', `turn.end status ${JSON.stringify(turn.events.at(-1)?.['status'])}, expected complete`);
    return `${middle.length} events as scripted`;
  },
};

const failed: Check = {
  id: 's2.failed-turn',
  title: 'an agent that fails ends its turn with one turn.end status failed, with a valid proof of the text so far',
  rule: 'Words "A turn ends with exactly one turn.end"; §2 turn.end status failed',
  async run(context) {
    await context.turns.requireAgent();
    const turn = await context.turns.runScript('failed', failScript());
    expectWholeTurn(turn.events, 'the failed turn');
    expect(turn.events.at(-1)?.['status'] === 'failed', `turn.end status ${JSON.stringify(turn.events.at(-1)?.['status'])}, expected failed`);
    return expectIntegrity(turn.events, 'the failed turn');
  },
};

export const streamChecks: readonly Check[] = [headers, retryFirst, framing, fields, seqs, closes, integrity, script, failed];
