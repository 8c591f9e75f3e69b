/**
 * The client's domain types shared by the core, storage, the outbox and the public API.
 * They live here, at the bottom of the import graph, so that `core/` depends on nothing
 * above it; `storage/store.ts` and `types.ts` re-export them under their old names.
 */
import type { LifelineError } from '../errors.js';
import type { ActionEvent, JsonObject, MessageContent, PartObject, ServerTurnStatus, SubmitContext, TurnEndStatus } from '../protocol/schemas.js';

/** Status of a turn as the client tracks it (wider than the server's). */
export type TurnStatus =
  | 'pending'
  | 'streaming'
  | 'reconnecting'
  | 'stalled'
  | 'recovering'
  | 'complete'
  | 'failed'
  | 'cancelled';

/** The three statuses after which nothing more can happen to a turn: those `turn.end` may carry (docs/protocol.md section 2). */
export type EndedTurnStatus = TurnEndStatus;

/**
 * True for `complete`, `failed` and `cancelled`: the statuses after which a turn never
 * changes again. The one test of it, for the client's statuses and the server's alike.
 */
export function isEnded(status: TurnStatus | ServerTurnStatus): status is EndedTurnStatus {
  return status === 'complete' || status === 'failed' || status === 'cancelled';
}

/** State of the single network connection that follows a turn. */
export type ConnectionState = 'idle' | 'connecting' | 'open' | 'waiting' | 'offline' | 'closed';

/** One action call as the snapshot shows it: the latest state of each `callId`. */
export interface ActionState {
  callId: string;
  name: string;
  status: ActionEvent['status'];
  input?: ActionEvent['input'];
  output?: ActionEvent['output'];
  error?: ActionEvent['error'];
  /** seq of the last event that changed this action. */
  seq: number;
}

/**
 * One entry of a turn's message, in order: a `part` event's part; or (no `part`, no `into`)
 * the start of an implicit text part, opened by a delta that found no text part open; or
 * (`into`) a run of deltas that goes back to the text part opened by entry `into` (a delta
 * whose `partId` names an open part other than the one being filled: interleaved parts), or
 * that carries `providerMetadata`. `at` is the turn's text length when the entry was
 * applied: a run of text goes from the `at` of the entry that started it (a text part or an
 * `into`) to the next such entry's, into that entry's text part.
 */
export interface PartEntry {
  at: number;
  part?: PartObject;
  /** Index of the entry that opened the text part this run of deltas goes to. */
  into?: number;
  /** The `providerMetadata` of the delta that started this run or implicit part (a text part keeps its last). */
  providerMetadata?: JsonObject;
}

/** State of an outbox entry. */
export type OutboxState = 'queued' | 'sending' | 'accepted' | 'failed';

/** One durable submission (object store `outbox`, key `operationId`). */
export interface OutboxRecord {
  operationId: string;
  conversationId: string;
  content: MessageContent;
  /** Per-request data sent beside the content (docs/protocol.md §1); part of the idempotency fingerprint, so stored. */
  context?: SubmitContext;
  createdAt: number;
  /** Monotonic order within the namespace; entries of a conversation are sent in this order. */
  order: number;
  attempts: number;
  nextAttemptAt: number;
  state: OutboxState;
  lastError?: ReturnType<LifelineError['toJSON']>;
  turnId?: string;
  messageId?: string;
  acceptedAt?: number;
}
