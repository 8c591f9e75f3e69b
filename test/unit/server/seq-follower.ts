/**
 * A client's view of one turn over raw SSE, for the shared-store suites: applied once
 * each in seq order, resumed from its own last seq; plus the T= and J0 checks.
 */
import { createParser } from 'eventsource-parser';
import { expect } from 'vitest';
import { sha256Hex } from '../../../src/protocol/integrity.js';
import { turnEventSchema, type TurnEvent } from '../../../src/protocol/schemas.js';
import type { Turn, TurnSnapshot } from '../../../src/types.js';
import { textOf } from '../../fixtures/server.js';

/**
 * A client's view of one turn, the way Lifeline's client keeps it: events applied once
 * each, in seq order; its own last applied seq is the only resume cursor.
 */
export function createFollower(turnId: string) {
  const applied: TurnEvent[] = [];
  let duplicates = 0;
  let gaps = 0;
  /** Heartbeats since the last applied event: a live producer's silence, or a dead one's limbo. */
  let heartbeatsSinceProgress = 0;
  /** Heartbeats between the last event before turn.end and turn.end. */
  let heartbeatsBeforeEnd = 0;
  const listeners = new Set<() => void>();
  const lastApplied = (): number => applied.at(-1)?.seq ?? 0;

  function apply(event: TurnEvent): void {
    if (event.seq <= lastApplied()) duplicates++;
    else if (event.seq > lastApplied() + 1) gaps++;
    else {
      applied.push(event);
      if (event.type === 'turn.end') heartbeatsBeforeEnd = heartbeatsSinceProgress;
      heartbeatsSinceProgress = 0;
    }
    for (const listener of [...listeners]) listener();
  }

  return {
    applied,
    get duplicates() {
      return duplicates;
    },
    get gaps() {
      return gaps;
    },
    get heartbeatsBeforeEnd() {
      return heartbeatsBeforeEnd;
    },
    ended: () => applied.at(-1)?.type === 'turn.end',
    /**
     * Follows on `baseUrl` from the last applied seq until the body ends: `ended` after
     * turn.end, else `cut`; `refused` when the server answered 5xx (its store was away).
     */
    async follow(baseUrl: string): Promise<'ended' | 'cut' | 'refused'> {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (lastApplied() > 0) headers['last-event-id'] = String(lastApplied());
      const response = await fetch(`${baseUrl}/turns/${turnId}/events`, { headers });
      if (response.status === 204) return 'ended';
      if (response.status >= 500) {
        await response.body?.cancel();
        return 'refused';
      }
      expect(response.status).toBe(200);
      const parser = createParser({
        onEvent(message) {
          if (message.event === 'heartbeat') heartbeatsSinceProgress++;
          if (message.id === undefined) return;
          apply(turnEventSchema.parse(JSON.parse(message.data)));
        },
      });
      const decoder = new TextDecoder();
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          parser.feed(decoder.decode(value, { stream: true }));
        }
      } catch {
        return 'cut';
      }
      // A clean close before turn.end is a cut too.
      return this.ended() ? 'ended' : 'cut';
    },
    /** Resolves once `predicate` holds over what was applied. */
    until(predicate: (events: readonly TurnEvent[]) => boolean): Promise<void> {
      return new Promise((resolve) => {
        const check = (): void => {
          if (!predicate(applied)) return;
          listeners.delete(check);
          resolve();
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/** Resolves once the turn's snapshot satisfies `predicate`. */
export function untilSnapshot(turn: Turn, predicate: (snapshot: TurnSnapshot) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (!predicate(turn.getSnapshot())) return;
      unsubscribe();
      resolve();
    };
    const unsubscribe = turn.subscribe(check);
    check();
  });
}

export function seqs(events: readonly TurnEvent[]): number[] {
  return events.map((event) => event.seq);
}

export function oneToN(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1);
}

/** T=: the applied text is the server's, and the turn.end hash proves it. */
export async function expectIntact(applied: readonly TurnEvent[], logged: readonly TurnEvent[]): Promise<void> {
  expect(applied).toEqual(logged);
  expect(seqs(applied)).toEqual(oneToN(logged.length));
  const end = applied.at(-1);
  if (end?.type !== 'turn.end') throw new Error('the turn did not end');
  const text = textOf(applied);
  expect(end.textLength).toBe(text.length);
  expect(end.textSha256).toBe(await sha256Hex(text));
}
