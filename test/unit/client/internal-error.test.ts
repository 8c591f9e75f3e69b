/**
 * Issue 23, H2: a throw inside the follower's own handling is a bug, not a network
 * condition. The turn must end `failed` with `internal_error` at once, visibly: status,
 * connection closed, `completed` settled, no request left running. Both the machine's
 * transition and the per-event hot path are made to throw once.
 */
import './support/dom-shim.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { follow } from './support/follow.js';
import { buildLog, startScriptedServer, TURN, type ScriptedServer } from './support/scripted-server.js';

const faults = vi.hoisted(() => ({ transition: false, decode: false }));

vi.mock('../../../src/core/follow-machine.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../../src/core/follow-machine.js')>();
  return {
    ...original,
    transition: (...args: Parameters<typeof original.transition>) => {
      if (faults.transition && args[1].kind === 'progress') {
        faults.transition = false;
        throw new TypeError('a bug in a transition');
      }
      return original.transition(...args);
    },
  };
});

vi.mock('../../../src/protocol/decode.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../../src/protocol/decode.js')>();
  return {
    ...original,
    // The stream decodes with decodeData (relayed batches with decodeEvent): either throws once.
    decodeEvent: (...args: Parameters<typeof original.decodeEvent>) => {
      if (faults.decode) {
        faults.decode = false;
        throw new TypeError('a bug on the hot path');
      }
      return original.decodeEvent(...args);
    },
    decodeData: (...args: Parameters<typeof original.decodeData>) => {
      if (faults.decode) {
        faults.decode = false;
        throw new TypeError('a bug on the hot path');
      }
      return original.decodeData(...args);
    },
  };
});

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  faults.transition = faults.decode = false;
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

async function server(): Promise<ScriptedServer> {
  const log = await buildLog(['one ', 'two ', 'three']);
  const scripted = await startScriptedServer({ log });
  cleanup.push(() => scripted.close());
  return scripted;
}

describe('H2: a throw inside the client ends the turn failed, visibly', () => {
  it.each([
    ['the machine throws on a transition', 'transition'],
    ['the hot path throws on an event', 'decode'],
  ] as const)('%s: failed internal_error, connection closed, completed settled, no retry', async (_, where) => {
    const scripted = await server();
    faults[where] = true;
    const followed = follow(scripted.baseUrl, TURN);
    cleanup.push(() => followed.client.dispose());
    const final = await followed.turn.completed;
    expect(final.status).toBe('failed');
    expect(final.error?.code).toBe('internal_error');
    expect(final.error?.cause).toBeInstanceOf(TypeError);
    expect(final.connection.state).toBe('closed');
    expect(followed.ofType('failed')).toEqual([expect.objectContaining({ scope: 'stream', error: expect.objectContaining({ code: 'internal_error' }) })]);
    expect(followed.ofType('retry')).toEqual([]);
    expect(scripted.streams).toHaveLength(1);
  });
});
