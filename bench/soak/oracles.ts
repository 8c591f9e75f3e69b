/**
 * The oracles of FAULTS.md as pure functions over what the soak recorded:
 * J0 over the client's applied (turnId, seq) log, T= over texts, X1 over the server's
 * idempotency ledger.
 */
import { createHash } from 'node:crypto';
import type { TurnEvent } from '../../src/protocol/schemas.js';
import { canonicalJson } from './canonical.js';

export { canonicalJson };

export function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The assistant text of a log. */
export function textOf(events: readonly TurnEvent[]): string {
  let text = '';
  for (const event of events) if (event.type === 'delta') text += event.text;
  return text;
}

/** One event a page applied, as its Turn iterator yielded it. */
export interface AppliedRecord {
  /** Which tab ('A' main, 'B' second tab) and which page load of it. */
  tab: string;
  session: number;
  turnId: string;
  seq: number;
  /** {@link canonicalJson} of the event. */
  event: string;
}

/** A page started following a turn whose state already reached `baseline` (from storage or earlier). */
export interface AttachRecord {
  tab: string;
  session: number;
  turnId: string;
  baseline: number;
}

export interface J0Counts {
  lost: number;
  duplicated: number;
  outOfOrder: number;
  unexpected: number;
}

export interface J0Result extends J0Counts {
  /** Human-readable reasons for every non-zero count (first few). */
  notes: string[];
}

/**
 * J0 for one turn. Within each (tab, session) the applied seqs must continue the
 * session's baseline one by one: a seq at or below one already applied is a duplicate
 * (or out of order when it was never applied), a jump is lost events. Across the
 * primary tab's sessions, its last session must reach the server's last seq. Every
 * applied event must equal the server's event at that seq (else unexpected).
 */
export function checkJ0(
  serverEvents: readonly TurnEvent[],
  attaches: readonly AttachRecord[],
  applied: readonly AppliedRecord[],
  primaryTab: string,
): J0Result {
  const result: J0Result = { lost: 0, duplicated: 0, outOfOrder: 0, unexpected: 0, notes: [] };
  const note = (text: string) => {
    if (result.notes.length < 5) result.notes.push(text);
  };
  const bySeq = new Map(serverEvents.map((event) => [event.seq, canonicalJson(event)]));
  const lastSeq = serverEvents.at(-1)?.seq ?? 0;
  const sessionKey = (tab: string, session: number) => `${tab}#${session}`;
  const sessions = new Map<string, { tab: string; session: number; cursor: number; seen: Set<number> }>();
  for (const attach of attaches) {
    const key = sessionKey(attach.tab, attach.session);
    if (!sessions.has(key)) sessions.set(key, { tab: attach.tab, session: attach.session, cursor: attach.baseline, seen: new Set() });
  }
  for (const record of applied) {
    const key = sessionKey(record.tab, record.session);
    let state = sessions.get(key);
    if (!state) {
      // Applied without an attach record: count from nothing.
      state = { tab: record.tab, session: record.session, cursor: 0, seen: new Set() };
      sessions.set(key, state);
      note(`${key}: applied seq ${record.seq} without an attach record`);
    }
    const expected = bySeq.get(record.seq);
    if (expected === undefined || expected !== record.event) {
      result.unexpected++;
      note(`${key}: seq ${record.seq} ${expected === undefined ? 'is not in the server log' : 'differs from the server event'}`);
    }
    if (record.seq <= state.cursor) {
      if (state.seen.has(record.seq) || record.seq <= (attaches.find((a) => sessionKey(a.tab, a.session) === key)?.baseline ?? 0)) {
        result.duplicated++;
        note(`${key}: seq ${record.seq} applied again (cursor ${state.cursor})`);
      } else {
        result.outOfOrder++;
        note(`${key}: seq ${record.seq} after ${state.cursor}`);
      }
      continue;
    }
    if (record.seq > state.cursor + 1) {
      result.lost += record.seq - state.cursor - 1;
      note(`${key}: jumped from ${state.cursor} to ${record.seq}`);
    }
    state.cursor = record.seq;
    state.seen.add(record.seq);
  }
  const primary = [...sessions.values()].filter((s) => s.tab === primaryTab).sort((a, b) => a.session - b.session).at(-1);
  if (!primary) {
    result.lost += lastSeq;
    note(`tab ${primaryTab} never followed the turn`);
  } else if (primary.cursor < lastSeq) {
    result.lost += lastSeq - primary.cursor;
    note(`${sessionKey(primary.tab, primary.session)} stopped at seq ${primary.cursor} of ${lastSeq}`);
  }
  return result;
}

/** X1 over the ledger: each soak submission produced exactly one turn; each key mapped to one turn. */
export function checkX1(
  turnsBySubmission: ReadonlyMap<number, readonly string[]>,
  turnsByKey: ReadonlyMap<string, ReadonlySet<string>>,
  submitted: readonly number[],
): { doubleEffect: number; missing: number; notes: string[] } {
  const notes: string[] = [];
  let doubleEffect = 0;
  let missing = 0;
  for (const index of submitted) {
    const turns = turnsBySubmission.get(index) ?? [];
    if (turns.length === 0) {
      missing++;
      if (notes.length < 5) notes.push(`submission ${index} never created a turn`);
    } else if (turns.length > 1) {
      doubleEffect += turns.length - 1;
      if (notes.length < 5) notes.push(`submission ${index} created ${turns.length} turns`);
    }
  }
  for (const [key, turns] of turnsByKey) {
    if (turns.size > 1) {
      doubleEffect += turns.size - 1;
      if (notes.length < 5) notes.push(`key ${key} maps to ${turns.size} turns`);
    }
  }
  return { doubleEffect, missing, notes };
}
