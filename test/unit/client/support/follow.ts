/**
 * Helpers to follow a turn in tests and record what the client did: every diagnostic
 * and the exact log of applied seqs (the J0 oracle).
 */
import { expect } from 'vitest';
import { createLifeline } from '../../../../src/client.js';
import { createMemoryStore, type MemoryStore } from '../../../../src/storage/memory-store.js';
import type { Diagnostic, LifelineClient, LifelineOptions, Turn } from '../../../../src/types.js';
import { replayAll, textOf } from '../../../fixtures/server.js';

/** Fast retry timing so tests do not wait on production defaults. */
export const FAST_RETRY = { firstRetryJitterMs: 2, initialDelayMs: 2, maxDelayMs: 20 } as const;

export interface Followed {
  client: LifelineClient;
  store: MemoryStore;
  turn: Turn;
  diagnostics: Diagnostic[];
  /** seqs in the order the client applied them. */
  applied: number[];
  /** Resolves when the iterator over applied events finished. */
  iterated: Promise<void>;
  ofType<T extends Diagnostic['type']>(type: T): Extract<Diagnostic, { type: T }>[];
}

/** Creates a memory-backed client and follows `turnId`, recording diagnostics and applied seqs. */
export function follow(baseUrl: string, turnId: string, options: Partial<LifelineOptions> = {}): Followed {
  const diagnostics: Diagnostic[] = [];
  const store = createMemoryStore();
  const client = createLifeline({
    baseUrl,
    storage: store,
    retry: FAST_RETRY,
    ...options,
    onDiagnostic: (diagnostic) => {
      diagnostics.push(diagnostic);
      options.onDiagnostic?.(diagnostic);
    },
  });
  const turn = client.turn(turnId);
  const applied: number[] = [];
  const iterated = (async () => {
    for await (const event of turn) applied.push(event.seq);
  })();
  return {
    client,
    store,
    turn,
    diagnostics,
    applied,
    iterated,
    ofType: <T extends Diagnostic['type']>(type: T) => diagnostics.filter((d): d is Extract<Diagnostic, { type: T }> => d.type === type),
  };
}

/** 1, 2, … n */
export function range(n: number): number[] {
  return Array.from({ length: n }, (_, index) => index + 1);
}

/**
 * A fetch that counts response bytes the client has read. A macrotask that sees the
 * count grow knows the client has also parsed those bytes (that happens in the same
 * microtask chain), which lets fake-timer tests wait on the client without sleeping.
 */
export function countingFetch(): { fetch: typeof fetch; bytes(): number } {
  let bytes = 0;
  return {
    async fetch(input, init) {
      const response = await fetch(input, init);
      if (response.body === null || response.status === 204) return response;
      const reader = response.body.getReader();
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { done, value } = await reader.read();
          if (done) {
            controller.close();
            return;
          }
          bytes += value.byteLength;
          controller.enqueue(value);
        },
        cancel: (reason) => reader.cancel(reason),
      });
      return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    },
    bytes: () => bytes,
  };
}

/**
 * T= and J0 against the server's own log: the turn completed with exactly the logged text,
 * every seq applied once and in order. Answers the text, for checks of storage after it.
 */
export async function expectSameAsServer(baseUrl: string, followed: Followed, turnId: string): Promise<string> {
  const final = await followed.turn.completed;
  await followed.iterated;
  const { events } = await replayAll(baseUrl, turnId);
  expect(final.status).toBe('complete');
  expect(final.text).toBe(textOf(events));
  expect(followed.applied).toEqual(range(events.length));
  return textOf(events);
}
