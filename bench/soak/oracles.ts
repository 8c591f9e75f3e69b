/**
 * The oracles of docs/faults.md as pure functions over what the soak recorded:
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

/** A followed turn's state jumped to `seq` from storage (events another page applied and stored). */
export interface RestoreRecord {
  tab: string;
  session: number;
  turnId: string;
  seq: number;
}

/** The page's log of one turn, in the order it happened. */
export type FollowRecord = ({ k: 'attach' } & AttachRecord) | ({ k: 'restored' } & RestoreRecord) | ({ k: 'applied' } & AppliedRecord);

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
 * J0 for one turn, over its records in the order each page made them. Within each
 * (tab, session) the applied seqs must continue the session's state one by one (its
 * state starts at the attach baseline and may jump ahead from storage): a seq at or
 * below one already held is a duplicate (out of order when it filled a hole), a jump
 * is lost events. Some session of the primary tab must reach the server's last seq.
 * Every applied event must equal the server's event at that seq (else unexpected).
 */
export function checkJ0(serverEvents: readonly TurnEvent[], records: readonly FollowRecord[], primaryTab: string): J0Result {
  const result: J0Result = { lost: 0, duplicated: 0, outOfOrder: 0, unexpected: 0, notes: [] };
  const note = (text: string) => {
    if (result.notes.length < 5) result.notes.push(text);
  };
  const bySeq = new Map(serverEvents.map((event) => [event.seq, canonicalJson(event)]));
  const lastSeq = serverEvents.at(-1)?.seq ?? 0;
  /** Per session: the seq its state has reached, and the seqs below it it jumped over. */
  const sessions = new Map<string, { tab: string; session: number; cursor: number; holes: Set<number> }>();
  for (const record of records) {
    const key = `${record.tab}#${record.session}`;
    let state = sessions.get(key);
    if (record.k === 'attach') {
      if (!state) sessions.set(key, { tab: record.tab, session: record.session, cursor: record.baseline, holes: new Set() });
      continue;
    }
    if (!state) {
      state = { tab: record.tab, session: record.session, cursor: 0, holes: new Set() };
      sessions.set(key, state);
      note(`${key}: ${record.k} seq ${record.seq} before any attach record`);
    }
    if (record.k === 'restored') {
      // Storage holds everything up to its seq: holes below it are filled, not lost.
      for (const hole of state.holes) {
        if (hole <= record.seq) {
          state.holes.delete(hole);
          result.lost--;
        }
      }
      state.cursor = Math.max(state.cursor, record.seq);
      continue;
    }
    const expected = bySeq.get(record.seq);
    if (expected === undefined || expected !== record.event) {
      result.unexpected++;
      note(`${key}: seq ${record.seq} ${expected === undefined ? 'is not in the server log' : 'differs from the server event'}`);
    }
    if (record.seq <= state.cursor) {
      if (state.holes.delete(record.seq)) {
        // Late, not lost: it came after a later seq.
        result.lost--;
        result.outOfOrder++;
        note(`${key}: seq ${record.seq} applied after ${state.cursor}`);
      } else {
        result.duplicated++;
        note(`${key}: seq ${record.seq} applied again (held up to ${state.cursor})`);
      }
      continue;
    }
    if (record.seq > state.cursor + 1) {
      for (let hole = state.cursor + 1; hole < record.seq; hole++) state.holes.add(hole);
      result.lost += record.seq - state.cursor - 1;
      note(`${key}: jumped from ${state.cursor} to ${record.seq}`);
    }
    state.cursor = record.seq;
  }
  // Some page load of the primary tab must have held the whole turn (a later load may
  // simply show the folded turn from storage, which T= checks).
  const reached = Math.max(-1, ...[...sessions.values()].filter((s) => s.tab === primaryTab).map((s) => s.cursor));
  if (reached < 0) {
    result.lost += lastSeq;
    note(`tab ${primaryTab} never followed the turn`);
  } else if (reached < lastSeq) {
    result.lost += lastSeq - reached;
    note(`tab ${primaryTab} never got past seq ${reached} of ${lastSeq}`);
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
