/**
 * zod schemas of the wire objects only the server side reads: a receipt's body (section
 * 10: the client builds it, the server parses it) and the operator API's answers (section
 * 11: read by `lifeline-chat-admin`, the support example and the tests). They live apart
 * from `schemas.ts` because a zod schema is built by a call when its module loads, so a
 * bundler keeps every schema of a module the client imports, used or not.
 */
import * as z from 'zod/mini';
import { seqSchema, turnObjectSchema } from './schemas.js';

// ---------------------------------------------------------------- section 10: receipts

/** `POST /turns/{id}/delivered`: the turn.end seq and the SHA-256 (hex) of the client's own copy of the text. */
export const receiptBodySchema = z.object({
  seq: seqSchema,
  textSha256: z.string().check(z.regex(/^[0-9a-f]{64}$/)),
});
export type ReceiptBody = z.infer<typeof receiptBodySchema>;

export const receiptAnswerSchema = z.object({ turn: turnObjectSchema });
export type ReceiptAnswer = z.infer<typeof receiptAnswerSchema>;

// ---------------------------------------------------------------- section 11: operator API

/** The states an operator lists turns by. */
export const operatorStateSchema = z.enum(['live', 'stuck', 'undelivered', 'mismatch', 'failed']);
export type OperatorState = z.infer<typeof operatorStateSchema>;
/** A turn object as the operator API shows it: with the principal it belongs to. */
export const operatorTurnSchema = z.extend(turnObjectSchema, { principal: z.string() });
export type OperatorTurn = z.infer<typeof operatorTurnSchema>;
export const operatorListAnswerSchema = z.object({ turns: z.array(operatorTurnSchema) });
export type OperatorListAnswer = z.infer<typeof operatorListAnswerSchema>;
export const operatorShowAnswerSchema = z.object({ turn: operatorTurnSchema, events: z.array(z.unknown()), hasMore: z.boolean() });
export type OperatorShowAnswer = z.infer<typeof operatorShowAnswerSchema>;
export const operatorEndAnswerSchema = z.object({ turn: operatorTurnSchema });
export type OperatorEndAnswer = z.infer<typeof operatorEndAnswerSchema>;
