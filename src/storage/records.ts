/**
 * zod (`zod/mini`) schemas of what Lifeline keeps in IndexedDB, matching the record types of
 * `store.ts`. Everything read back is checked with them: storage outlives the code that
 * wrote it, and another version, an extension or a bad disk can leave anything there.
 * A record that fails is skipped and reported, never passed on.
 */
import * as z from 'zod/mini';
import { StorageError, type LifelineErrorCode, type LifelineErrorKind } from '../errors.js';
import { plainDelta, summarize } from '../protocol/decode.js';
import { actionFields, idempotencyKeySchema, idSchema, seqSchema, submitBodySchema, turnEventSchema } from '../protocol/schemas.js';
import type { LeaseRecord } from './schema.js';
import type { TurnEvent } from '../protocol/schemas.js';
import type { ActionState, EventChunk, OutboxRecord, OutboxState, TurnRecord, TurnStatus } from './store.js';

// Records keyed by every member of the union, so a new status or kind fails to compile here.
const STATUS_ENDED: Readonly<Record<TurnStatus, boolean>> = {
  pending: false,
  streaming: false,
  reconnecting: false,
  stalled: false,
  recovering: false,
  complete: true,
  failed: true,
  cancelled: true,
};
const ERROR_KINDS: Readonly<Record<LifelineErrorKind, true>> = { transport: true, protocol: true, storage: true, cancelled: true, usage: true };
const OUTBOX_STATES: Readonly<Record<OutboxState, true>> = { queued: true, sending: true, accepted: true, failed: true };

type NonEmpty<T> = [T, ...T[]];
const keysOf = <K extends string>(record: Readonly<Record<K, unknown>>): NonEmpty<K> => Object.keys(record) as NonEmpty<K>;

/** The statuses after which a turn never changes again. */
export const ENDED_STATUSES: readonly TurnStatus[] = keysOf(STATUS_ENDED).filter((status) => STATUS_ENDED[status]);

/** True for `complete`, `failed` and `cancelled`. */
export function isEndedStatus(status: TurnStatus): boolean {
  return STATUS_ENDED[status];
}

const epochMsSchema = z.number().check(z.gte(0));

/** `LifelineError#toJSON()` as stored. Codes are open-ended (new ones may be added), so any snake_case code passes. */
const errorJsonSchema = z.object({
  name: z.string().check(z.maxLength(200)),
  kind: z.enum(keysOf(ERROR_KINDS)),
  code: z.custom<LifelineErrorCode>((value) => typeof value === 'string' && /^[a-z][a-z0-9_]{0,63}$/.test(value)),
  message: z.string(),
  status: z.exactOptional(z.number().check(z.int())),
  serverCode: z.exactOptional(z.string()),
});

const actionStateSchema = z.object({ ...actionFields, seq: seqSchema }) satisfies z.ZodMiniType<ActionState>;

/** A row of object store `turns`. `endedAt` only on ended turns (the sweep index relies on it). */
export const turnRecordSchema = z
  .object({
    id: idSchema,
    conversationId: idSchema,
    messageId: z.exactOptional(idSchema),
    operationId: z.exactOptional(idempotencyKeySchema),
    // Optional: rows written before it existed load as they are.
    content: z.exactOptional(submitBodySchema.shape.content),
    status: z.enum(keysOf(STATUS_ENDED)),
    lastSeq: z.number().check(z.int(), z.gte(0), z.lte(Number.MAX_SAFE_INTEGER)),
    createdAt: epochMsSchema,
    updatedAt: epochMsSchema,
    endedAt: z.exactOptional(epochMsSchema),
    text: z.exactOptional(z.string()),
    actions: z.exactOptional(z.array(actionStateSchema)),
    error: z.exactOptional(errorJsonSchema),
  })
  .check(
    z.refine((row) => row.endedAt === undefined || STATUS_ENDED[row.status], {
      message: 'endedAt is only allowed on an ended turn',
      path: ['endedAt'],
    }),
  ) satisfies z.ZodMiniType<TurnRecord>;

const chunkEnvelopeSchema = z.object({
  turnId: idSchema,
  firstSeq: seqSchema,
  lastSeq: seqSchema,
  events: z.array(z.unknown()).check(z.minLength(1)),
});

/**
 * Validates a record of object store `chunks`: events `firstSeq..lastSeq` of one turn,
 * consecutive, in order, each a valid protocol event. Text deltas, nearly every event
 * of a turn, are checked by hand: on a cold page zod's first pass over 10 000 events
 * costs about 30 ms, most of the hydration budget. Anything that is not a plain delta
 * goes through the protocol's own schema.
 */
export function checkChunk(value: unknown, key: IDBValidKey | undefined): CheckedRecord<EventChunk> {
  const envelope = chunkEnvelopeSchema.safeParse(value);
  if (!envelope.success) return { ok: false, error: corruptRecord('chunks', key, summarize(envelope.error), envelope.error.issues.slice(0, 5)) };
  const raw = envelope.data.events;
  const events: TurnEvent[] = [];
  for (let i = 0; i < raw.length; i++) {
    // Another turn's delta takes the schema's path and is then caught by chunkProblem.
    const delta = plainDelta(raw[i], envelope.data.turnId);
    if (delta !== undefined) {
      events.push(delta);
      continue;
    }
    const parsed = turnEventSchema.safeParse(raw[i]);
    if (!parsed.success) {
      return { ok: false, error: corruptRecord('chunks', key, `events.${i}: ${summarize(parsed.error)}`, parsed.error.issues.slice(0, 5)) };
    }
    events.push(parsed.data);
  }
  const chunk: EventChunk = { turnId: envelope.data.turnId, firstSeq: envelope.data.firstSeq, lastSeq: envelope.data.lastSeq, events };
  const problem = chunkProblem(chunk);
  if (problem !== undefined) return { ok: false, error: corruptRecord('chunks', key, problem) };
  return { ok: true, value: chunk };
}

/** A record of object store `outbox`. */
export const outboxRecordSchema = z.object({
  operationId: idempotencyKeySchema,
  conversationId: idSchema,
  content: submitBodySchema.shape.content,
  createdAt: epochMsSchema,
  order: z.number(),
  attempts: z.number().check(z.int(), z.gte(0)),
  nextAttemptAt: epochMsSchema,
  state: z.enum(keysOf(OUTBOX_STATES)),
  lastError: z.exactOptional(errorJsonSchema),
  turnId: z.exactOptional(idSchema),
  messageId: z.exactOptional(idSchema),
  acceptedAt: z.exactOptional(epochMsSchema),
}) satisfies z.ZodMiniType<OutboxRecord>;

/** A record of object store `leases`. */
export const leaseRecordSchema = z.object({
  name: z.string().check(z.minLength(1)),
  owner: z.string().check(z.minLength(1)),
  expiresAt: z.number(),
}) satisfies z.ZodMiniType<LeaseRecord>;

/**
 * Why a chunk's shape is inconsistent (`undefined` when it is fine): every event must
 * belong to the chunk's turn and the seqs must run `firstSeq, firstSeq + 1, … lastSeq`.
 * Cheap enough for the write path, where events were already validated on arrival.
 */
export function chunkProblem(chunk: Pick<EventChunk, 'turnId' | 'firstSeq' | 'lastSeq' | 'events'>): string | undefined {
  const { events, firstSeq, lastSeq, turnId } = chunk;
  if (events.length !== lastSeq - firstSeq + 1) {
    return `chunk ${firstSeq}..${lastSeq} holds ${events.length} events`;
  }
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as EventChunk['events'][number];
    if (event.seq !== firstSeq + i) return `event at index ${i} has seq ${event.seq}, expected ${firstSeq + i}`;
    if (event.turnId !== turnId) return `event seq ${event.seq} belongs to turn ${event.turnId}`;
  }
  return undefined;
}

/** Outcome of {@link checkRecord}. */
export type CheckedRecord<T> = { ok: true; value: T } | { ok: false; error: StorageError };

/**
 * Validates one stored value. On failure the error (`storage_corrupt_record`) names the
 * object store and key, and carries the first zod issues in `details`.
 */
export function checkRecord<T>(schema: z.ZodMiniType<T>, value: unknown, storeName: string, key: IDBValidKey | undefined): CheckedRecord<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, error: corruptRecord(storeName, key, summarize(parsed.error), parsed.error.issues.slice(0, 5)) };
}

/** A `storage_corrupt_record` error for a record of `storeName` at `key`. */
export function corruptRecord(storeName: string, key: IDBValidKey | undefined, reason: string, issues?: unknown): StorageError {
  const shownKey = describeKey(key);
  return new StorageError('storage_corrupt_record', `Skipped a corrupt or foreign record in "${storeName}" (key ${shownKey}): ${reason}`, {
    details: { store: storeName, key: shownKey, ...(issues === undefined ? {} : { issues }) },
  });
}

function describeKey(key: IDBValidKey | undefined): string {
  if (key === undefined) return '(unknown)';
  let text: string;
  try {
    text = JSON.stringify(key) ?? String(key);
  } catch {
    text = String(key);
  }
  // A foreign key may be anything; keep messages and diagnostics small.
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
