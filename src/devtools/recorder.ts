'use client';
/**
 * What the panel remembers of `client.diagnostics` (a stream with no history): each
 * diagnostic filed under the turn or the submission it is about, or under the client. One
 * recorder per client, kept beside it, so closing and reopening the panel loses nothing; it
 * starts listening the first time a panel renders for that client.
 */
import type { Diagnostic, ExternalStore, LifelineClient } from '../types.js';

/** Entries kept per timeline: the newest win. */
export const TIMELINE_LIMIT = 200;

export interface History {
  /** By turn id; a submission's entries join its turn once accepted. */
  readonly turns: ReadonlyMap<string, readonly Diagnostic[]>;
  /** By operation id (the submission's Idempotency-Key). */
  readonly submissions: ReadonlyMap<string, readonly Diagnostic[]>;
  /** Storage, network and everything not about one turn or submission. */
  readonly client: readonly Diagnostic[];
}

/** Where a diagnostic is filed. */
function placeOf(d: Diagnostic): { turn?: string; submission?: string } {
  if ('turnId' in d && d.turnId !== undefined) return { turn: d.turnId, ...('operationId' in d && { submission: d.operationId }) };
  if ('scope' in d) return d.scope === 'submit' ? { submission: d.id } : { turn: d.id };
  if ('operationId' in d) return { submission: d.operationId };
  return {};
}

const append = (list: readonly Diagnostic[] | undefined, d: Diagnostic): readonly Diagnostic[] => [...(list ?? []).slice(1 - TIMELINE_LIMIT), d];

/** A recorder of `client`'s diagnostics from now on (the same one for the client's life). */
export function recorderOf(client: LifelineClient): ExternalStore<History> {
  let recorder = recorders.get(client);
  if (!recorder) recorders.set(client, (recorder = createRecorder(client)));
  return recorder;
}

const recorders = new WeakMap<LifelineClient, ExternalStore<History>>();

function createRecorder(client: LifelineClient): ExternalStore<History> {
  const turns = new Map<string, readonly Diagnostic[]>();
  const submissions = new Map<string, readonly Diagnostic[]>();
  let rest: readonly Diagnostic[] = [];
  let snapshot: History | undefined;
  const listeners = new Set<() => void>();
  let scheduled = false;

  client.diagnostics.subscribe((d) => {
    const { turn, submission } = placeOf(d);
    if (submission !== undefined) submissions.set(submission, append(submissions.get(submission), d));
    // Accepted: the turn's story starts with its submission's.
    if (d.type === 'accepted') turns.set(d.turnId, [...(submissions.get(d.operationId) ?? []), ...(turns.get(d.turnId) ?? [])].slice(-TIMELINE_LIMIT));
    else if (turn !== undefined) turns.set(turn, append(turns.get(turn), d));
    if (turn === undefined && submission === undefined) rest = append(rest, d);
    snapshot = undefined;
    // One notification per burst (a reconnect says several things in one task).
    if (scheduled) return;
    scheduled = true;
    queueMicrotask(() => {
      scheduled = false;
      for (const listener of [...listeners]) listener();
    });
  });

  return {
    getSnapshot: () => (snapshot ??= { turns: new Map(turns), submissions: new Map(submissions), client: rest }),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
