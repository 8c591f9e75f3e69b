/**
 * zod (`zod/mini`) schemas of what Lifeline keeps in storage, matching the record types of
 * `store.ts`. Storage outlives the code that wrote it, and another version, an extension
 * or a bad disk can leave anything there: everything read back is checked, and a record
 * that fails is skipped and reported, never passed on.
 */
import * as z from 'zod/mini';
import { StorageError, type LifelineErrorCode, type LifelineErrorKind } from '../errors.js';
import { decodeEventValue } from '../protocol/decode.js';
import { actionFields, idempotencyKeySchema, idSchema, jsonObjectSchema, partSchema, seqSchema, submitBodySchema, type LoggedEvent } from '../protocol/schemas.js';
import type { LoadResult, OutboxRecord, TurnRecord } from './store.js';

export { isEnded } from '../core/domain.js';

const time = z.number().check(z.gte(0));
const count = z.int().check(z.gte(0));
const text = z.string();
const content = submitBodySchema.shape.content;
const optional = z.exactOptional;
const context = optional(jsonObjectSchema);
/** Kinds and codes are open-ended (new ones may come): any string, as `errorFromJson` copes with any. */
const errorSchema = optional(
  z.object({
    name: text,
    kind: text as z.ZodMiniType<string> as z.ZodMiniType<LifelineErrorKind>,
    code: text as z.ZodMiniType<string> as z.ZodMiniType<LifelineErrorCode>,
    message: text,
    status: optional(z.number()),
    serverCode: optional(text),
  }),
);

/** A row of object store `turns`. */
export const turnRecordSchema = z.object({
  id: idSchema,
  conversationId: idSchema,
  messageId: optional(idSchema),
  operationId: optional(idempotencyKeySchema),
  content: optional(content),
  status: z.enum(['pending', 'streaming', 'reconnecting', 'stalled', 'recovering', 'complete', 'failed', 'cancelled']),
  lastSeq: count,
  createdAt: time,
  updatedAt: time,
  endedAt: optional(time),
  text: optional(text),
  actions: optional(z.array(z.object({ ...actionFields, seq: seqSchema }))),
  parts: optional(z.array(z.object({ at: count, part: optional(partSchema), into: optional(count), providerMetadata: optional(jsonObjectSchema) }))),
  error: errorSchema,
}) satisfies z.ZodMiniType<TurnRecord>;

/** A record of object store `outbox`. */
export const outboxRecordSchema = z.object({
  operationId: idempotencyKeySchema,
  conversationId: idSchema,
  content,
  context,
  createdAt: time,
  order: z.number(),
  attempts: count,
  nextAttemptAt: time,
  state: z.enum(['queued', 'sending', 'accepted', 'failed']),
  lastError: errorSchema,
  turnId: optional(idSchema),
  messageId: optional(idSchema),
  acceptedAt: optional(time),
}) satisfies z.ZodMiniType<OutboxRecord>;

/**
 * A record of object store `chunks`: events `firstSeq..lastSeq` of its turn, consecutive,
 * in order, each valid by the protocol's own decoder (whose hand check of text deltas is
 * what keeps hydrating a 10 000-event turn fast).
 */
export const chunkSchema = z
  .object({ turnId: idSchema, firstSeq: seqSchema, lastSeq: seqSchema, events: z.array(z.custom<LoggedEvent>((event) => { const decoded = decodeEventValue(event); return decoded.kind == 'event' || (decoded.kind == 'unknown' && decoded.event !== undefined); })) })
  .check(
    z.refine(
      ({ turnId, firstSeq, lastSeq, events }) => events.length == lastSeq - firstSeq + 1 && events.every((event, i) => event?.seq == firstSeq + i && event.turnId == turnId),
    ),
  );

/** A `storage_corrupt_record` error naming where the record was (an object store, or the outbox `journal`) and its key. */
export function corruptRecord(store: string, key: unknown): StorageError {
  return new StorageError('storage_corrupt_record', 'Skipped a corrupt or foreign record.', { details: { store, key: JSON.stringify(key)?.slice(0, 200) } });
}

/** Validates every value of a read (`keyPath` names each record's key): good ones as items, one error per bad one. */
export function checkAll<T>(schema: z.ZodMiniType<T>, store: string, values: readonly unknown[], keyPath: string): LoadResult<T> {
  const result: LoadResult<T> = { items: [], skipped: [] };
  for (const value of values) {
    const parsed = schema.safeParse(value);
    if (parsed.success) result.items.push(parsed.data);
    else result.skipped.push(corruptRecord(store, (value as Record<string, unknown>)[keyPath]));
  }
  return result;
}
