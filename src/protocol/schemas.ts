/**
 * zod schemas of every wire object in docs/protocol.md (version 1.2) the client reads or
 * sends; those only the server side reads are in `server-schemas.ts`. The client validates
 * everything it receives with these; the reference server's tests validate everything
 * it produces with the same ones, so the two cannot drift apart.
 *
 * Written with `zod/mini`: classic `zod` cannot be tree-shaken and put ~90 kB min+gz into
 * the client bundle; the functional API brings only what these schemas use (~10 kB).
 */
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';
import { LifelineError } from '../errors.js';

// Classic zod installs these two itself (only when absent, so an app's own choice wins);
// zod/mini leaves them to the app. Without them issues read "Invalid input" and a cyclic
// value (possible in content handed to the outbox or a foreign IndexedDB row) overflows
// the stack in the recursive JSON schema instead of parsing as before. The memoizer is
// read when a container schema is built, so this runs before any schema below.
const zodConfig = z.config();
if (!zodConfig.localeError) z.config(en());
if (!zodConfig.memoizer) z.config({ memoizer: z.memoizer() });

/** Ids of conversations, turns and messages: `^[A-Za-z0-9_-]{1,128}$`. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
/** Throws `invalid_argument` unless `value` is an id (`what` names it in the message). */
export function assertId(what: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || !ID_PATTERN.test(value)) throw new LifelineError('invalid_argument', `${what} is invalid.`);
}
/** Idempotency keys: 16–128 characters of `[A-Za-z0-9_-]`. */
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
/** Resume points: 1 to 15 decimal digits and nothing else. */
export const RESUME_POINT_PATTERN = /^[0-9]{1,15}$/;
/** Largest submit body the protocol allows, in encoded bytes (64 KiB). */
export const MAX_SUBMIT_BYTES = 64 * 1024;
/** Largest `context` of a submission (docs/protocol.md §1, since 1.2): 16 KiB of UTF-8 JSON. */
export const MAX_CONTEXT_BYTES = 16 * 1024;

export const idSchema = z.string().check(z.regex(ID_PATTERN));
export const idempotencyKeySchema = z.string().check(z.regex(IDEMPOTENCY_KEY_PATTERN));
// `z.int()` accepts safe integers only.
export const seqSchema = z.int().check(z.gte(1));
/** ISO 8601 timestamp as produced by `Date.prototype.toISOString`. */
const timestampSchema = z.string().check(z.minLength(1), z.maxLength(64));
const nameSchema = z.string().check(z.minLength(1), z.maxLength(128));
const countSchema = z.int().check(z.gte(0));

/** A JSON value (used for message content objects and action input/output). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export const jsonValueSchema: z.ZodMiniType<JsonValue> = z.json();

// ---------------------------------------------------------------- section 1: submit

/** A JSON object (message content, a submission's `context`, a delta's `providerMetadata`). */
export type JsonObject = { [key: string]: JsonValue };
export const jsonObjectSchema: z.ZodMiniType<JsonObject> = z.record(z.string(), jsonValueSchema);

/** A message's content: a string or a JSON object. */
export const messageContentSchema = z.union([z.string(), jsonObjectSchema]);

export const submitBodySchema = z.object({
  content: messageContentSchema,
  /**
   * Per-request data beside the message (since 1.2; the AI SDK's `body` and request
   * `metadata`): handed to the agent for this submission only, stored with the turn and
   * counted in the idempotency fingerprint. At most {@link MAX_CONTEXT_BYTES}.
   */
  context: z.optional(jsonObjectSchema),
});
export type SubmitBody = z.infer<typeof submitBodySchema>;
export type MessageContent = SubmitBody['content'];
/** A submission's per-request `context` (docs/protocol.md §1). */
export type SubmitContext = JsonObject;

/** UTF-8 length of `value` encoded as JSON, as {@link MAX_CONTEXT_BYTES} and {@link MAX_SUBMIT_BYTES} count it. */
export function jsonBytes(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value)).byteLength;
}

/**
 * The id of the assistant message a continuation continues (docs/protocol.md §9, since 1.2):
 * content that is an AI SDK `UIMessage` with `role: "assistant"`, an id and its parts (each
 * an object with a string `type`). `undefined` for any other content (a new message).
 */
export function continuedMessageId(content: MessageContent): string | undefined {
  if (typeof content !== 'object' || content['role'] !== 'assistant') return undefined;
  const { id, parts } = content;
  const isPart = (part: JsonValue): boolean => typeof part === 'object' && part !== null && !Array.isArray(part) && typeof part['type'] === 'string';
  return typeof id === 'string' && ID_PATTERN.test(id) && Array.isArray(parts) && parts.every(isPart) ? id : undefined;
}

/** What ties a turn to its message and conversation. */
const origin = { messageId: idSchema, conversationId: idSchema };

export const submitAnswerSchema = z.object({
  turnId: idSchema,
  ...origin,
  status: z.literal('pending'),
});
export type SubmitAnswer = z.infer<typeof submitAnswerSchema>;

// ---------------------------------------------------------------- section 2: events

const eventBase = { turnId: idSchema, seq: seqSchema } as const;

export const turnStartEventSchema = z.object({
  ...eventBase,
  type: z.literal('turn.start'),
  ...origin,
  createdAt: timestampSchema,
});

export const deltaEventSchema = z.object({
  ...eventBase,
  type: z.literal('delta'),
  text: z.string(),
  /** Since 1.2: the text part the delta belongs to (the AI SDK's text part id, §9). */
  partId: z.optional(z.string()),
  /** Since 1.2: the AI SDK `text-delta`'s `providerMetadata`. */
  providerMetadata: z.optional(jsonObjectSchema),
});

export const actionStatusSchema = z.enum(['started', 'completed', 'failed']);
/** An action's own fields: events add turnId, seq and type; the client's stored action states add seq. */
export const actionFields = {
  callId: nameSchema,
  name: nameSchema,
  status: actionStatusSchema,
  input: z.optional(jsonValueSchema),
  output: z.optional(jsonValueSchema),
  error: z.optional(jsonValueSchema),
};
export const actionEventSchema = z.object({ ...eventBase, type: z.literal('action'), ...actionFields });

/**
 * A structured piece of the assistant's message (reasoning, a tool call, a source, an
 * AI SDK chunk, app data): a JSON object with a string `type`, opaque to the protocol.
 */
export type PartObject = { type: string; [key: string]: JsonValue };
export const partSchema: z.ZodMiniType<PartObject> = z.catchall(z.object({ type: z.string() }), jsonValueSchema);
export const partEventSchema = z.object({ ...eventBase, type: z.literal('part'), part: partSchema });

export const turnEndStatusSchema = z.enum(['complete', 'failed', 'cancelled']);
export const turnEndEventSchema = z.object({
  ...eventBase,
  type: z.literal('turn.end'),
  status: turnEndStatusSchema,
  error: z.optional(jsonValueSchema),
  textLength: countSchema,
  textSha256: z.string().check(z.regex(/^[0-9a-f]{64}$/)),
});

export const turnEventSchema = z.discriminatedUnion('type', [
  turnStartEventSchema,
  deltaEventSchema,
  actionEventSchema,
  partEventSchema,
  turnEndEventSchema,
]);

export type TurnStartEvent = z.infer<typeof turnStartEventSchema>;
export type DeltaEvent = z.infer<typeof deltaEventSchema>;
export type ActionEvent = z.infer<typeof actionEventSchema>;
export type ActionStatus = z.infer<typeof actionStatusSchema>;
export type PartEvent = z.infer<typeof partEventSchema>;
export type TurnEndEvent = z.infer<typeof turnEndEventSchema>;
export type TurnEndStatus = z.infer<typeof turnEndStatusSchema>;
/** Any event of a turn's log, as sent in an SSE `data:` line and in replay answers. */
export type TurnEvent = z.infer<typeof turnEventSchema>;

/**
 * An event of a type this client does not know (a newer server), as sent: placed by its
 * seq, stored and relayed like any event, skipped only for display (docs/faults.md row 46).
 */
export type UnknownEvent = { readonly turnId: string; readonly seq: number; readonly type: string } & { readonly [field: string]: unknown };

/** What a turn's log holds: its events, of known types or not. */
export type LoggedEvent = TurnEvent | UnknownEvent;
export type TurnEventType = TurnEvent['type'];
export const TURN_EVENT_TYPES: readonly TurnEventType[] = ['turn.start', 'delta', 'action', 'part', 'turn.end'];

// ---------------------------------------------------------------- section 3–5: turns

export const turnStatusSchema = z.enum(['pending', 'streaming', 'complete', 'failed', 'cancelled']);
export type ServerTurnStatus = z.infer<typeof turnStatusSchema>;

/** Whether the client has proven it holds the turn's whole answer (section 10, since 1.2). */
export const deliveryStateSchema = z.enum(['pending', 'delivered', 'mismatch']);
export type DeliveryState = z.infer<typeof deliveryStateSchema>;
export const deliverySchema = z.object({
  state: deliveryStateSchema,
  /** ISO 8601 of the first receipt. */
  at: z.optional(timestampSchema),
});
export type Delivery = z.infer<typeof deliverySchema>;

export const turnObjectSchema = z.object({
  id: idSchema,
  ...origin,
  status: turnStatusSchema,
  lastSeq: countSchema,
  createdAt: timestampSchema,
  updatedAt: timestampSchema,
  /** The message content that started the turn (1.1); optional because a 1.0 server does not send it. */
  content: z.optional(messageContentSchema),
  /** Delivery receipts (1.2); optional because a 1.1 server does not send it. */
  delivery: z.optional(deliverySchema),
  /** A continuation turn (1.2, §9): the id of the assistant message it continues. */
  continues: z.optional(idSchema),
});
export type TurnObject = z.infer<typeof turnObjectSchema>;

export const replayAnswerSchema = z.object({
  turn: turnObjectSchema,
  events: z.array(z.unknown()),
  hasMore: z.boolean(),
});
/** Replay answer; `events` are decoded one by one so a bad event does not hide the rest. */
export type ReplayAnswer = z.infer<typeof replayAnswerSchema>;

export const listAnswerSchema = z.object({ turns: z.array(turnObjectSchema) });
export type ListAnswer = z.infer<typeof listAnswerSchema>;

export const cancelAnswerSchema = z.object({ turn: turnObjectSchema });
export type CancelAnswer = z.infer<typeof cancelAnswerSchema>;

export const errorBodySchema = z.object({
  error: z.object({ code: z.string().check(z.regex(/^[a-z0-9_]+$/)), message: z.string() }),
});
export type ErrorBody = z.infer<typeof errorBodySchema>;

/** Server error codes named by docs/protocol.md. */
export type ServerErrorCode =
  | 'invalid_idempotency_key'
  | 'invalid_json'
  | 'invalid_body'
  | 'invalid_id'
  | 'idempotency_key_in_flight'
  | 'payload_too_large'
  | 'context_too_large'
  | 'unsupported_media_type'
  | 'idempotency_key_reused'
  | 'rate_limited'
  | 'overloaded'
  | 'turn_not_found'
  | 'turn_expired'
  | 'invalid_resume_point'
  | 'resume_point_ahead'
  | 'invalid_limit'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'headers_too_large'
  | 'request_timeout'
  | 'bad_request'
  | 'turn_not_ended'
  | 'invalid_receipt'
  | 'delivery_mismatch'
  | 'invalid_query'
  | 'internal_error'
  // The reference server's answers on a bad day (docs/faults.md #50–#52).
  | 'unavailable'
  | 'shutting_down'
  | 'cross_site_request';
