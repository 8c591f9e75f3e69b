/** Plain agents yielding `{ type: 'part', part }` (docs/protocol.md 1.1 §2): logged in order, or refused with the turn failed. */
import { afterEach, describe, expect, it } from 'vitest';
import type { Agent } from '../../../src/server/producer/agent.js';
import { replayAll, startTestServer, submitMessage, textOf, waitForTurnEnd, type TestServer } from '../../fixtures/server.js';

let server: (TestServer & { errors: unknown[] }) | undefined;
afterEach(() => server?.close());

async function run(agent: Agent, maxEventSize?: number) {
  server = await startTestServer({ agent, ...(maxEventSize && { maxEventSize }) });
  const answer = await submitMessage(server.baseUrl, 'conv-parts', 'hi');
  await waitForTurnEnd(server.log, answer.turnId);
  return (await replayAll(server.baseUrl, answer.turnId)).events;
}

describe('agent parts', () => {
  it('logs parts between deltas, in order, as sent', async () => {
    const events = await run(async function* () {
      yield { type: 'part', part: { type: 'reasoning', text: 'thinking' } };
      yield { type: 'delta', text: 'Hi ' };
      yield { type: 'part', part: { type: 'tool-weather', toolCallId: 'c1', state: 'output-available', input: { city: 'Oslo' }, output: { c: 3 } } };
      yield { type: 'delta', text: 'there' };
    });
    expect(events.map((event) => event.type)).toEqual(['turn.start', 'part', 'delta', 'part', 'delta', 'turn.end']);
    expect(events[1]).toMatchObject({ seq: 2, part: { type: 'reasoning', text: 'thinking' } });
    expect(events[3]).toMatchObject({ seq: 4, part: { type: 'tool-weather', output: { c: 3 } } });
    expect(events.at(-1)).toMatchObject({ status: 'complete', textLength: 'Hi there'.length });
    expect(textOf(events)).toBe('Hi there');
  });

  it.each([
    ['not an object', 'reasoning'],
    ['without a string type', { text: 'x' }],
    ['with a value that is not JSON', { type: 'x', at: () => 1 }],
  ])('ends the turn failed, keeping what was logged, for a part %s', async (_name, part) => {
    const events = await run(async function* () {
      yield { type: 'delta', text: 'kept' };
      yield { type: 'part', part } as never;
      yield { type: 'delta', text: 'never' };
    });
    expect(events.at(-1)).toMatchObject({ type: 'turn.end', status: 'failed', error: { code: 'invalid_agent_event', message: 'A part must be a JSON object with a string `type`.' } });
    expect(textOf(events)).toBe('kept');
  });

  it('ends the turn failed for a part over the event size limit', async () => {
    const events = await run(async function* () {
      yield { type: 'part', part: { type: 'data-big', data: 'x'.repeat(5000) } };
    }, 4096);
    expect(events.at(-1)).toMatchObject({ type: 'turn.end', status: 'failed', error: { code: 'turn_too_large' } });
    expect(events).toHaveLength(2);
  });
});
