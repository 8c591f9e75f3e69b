/**
 * The stream `sendMessages` answers: the user's message (or, for a continuation, the updated
 * assistant message, docs/protocol.md §9) goes through the durable outbox with the request's
 * `context` and headers, then the turn it starts streams from its first chunk. `useChat`'s abort (its Stop button)
 * withdraws a message still queued, or cancels its turn on the server; either way the stream
 * ends with an `abort` chunk and the chat is marked delivered, so a reload does not resume it.
 */
import type { UIMessage, UIMessageChunk } from 'ai';
import { asLifelineError } from '../errors.js';
import type { MessageContent } from '../protocol/schemas.js';
import type { LifelineClient, SendOptions, Submission, Turn } from '../types.js';
import type { DeliveredMarks } from './delivered.js';
import { turnStream } from './turn-stream.js';

export interface SendStreamOptions {
  abortSignal: AbortSignal | undefined;
  /** What the submission carries beside its content: a derived key for a continuation, `context`, headers. */
  send: SendOptions;
  /** The id the turn's `start` carries: the continued message's for a continuation. */
  messageId?: string | undefined;
  marks: DeliveredMarks;
  /** Failures the stream cannot carry (a withdrawal or cancel that failed). */
  report: (error: unknown) => void;
}

/** Sends `message` in `chatId` now and answers the stream of the turn it starts. */
export function sendStream(client: LifelineClient, chatId: string, message: UIMessage, { abortSignal, marks, report, send, messageId }: SendStreamOptions): ReadableStream<UIMessageChunk> {
  let submission: Submission;
  try {
    // Only the new message is sent (the server keeps the conversation), as plain JSON.
    submission = client.conversation(chatId).send(JSON.parse(JSON.stringify(message)) as MessageContent, send);
  } catch (cause) {
    // Refused before any request (too large, or this key holds another answer already).
    report(cause);
    const errorText = asLifelineError(cause).message;
    return new ReadableStream({ start: (controller) => (controller.enqueue({ type: 'error', errorText }), controller.close()) });
  }
  let inner: ReadableStream<UIMessageChunk> | undefined;
  let reader: ReadableStreamDefaultReader<UIMessageChunk> | undefined;
  return new ReadableStream<UIMessageChunk>({
    async start(controller) {
      const stop = new AbortController();
      let closed = false;
      const close = (last?: UIMessageChunk): void => {
        if (closed) return;
        closed = true;
        abortSignal?.removeEventListener('abort', stopped);
        if (last) controller.enqueue(last);
        controller.close();
      };
      const stopped = (): void => {
        // Never resumed: a reload finds this turn delivered.
        const entry = submission.getSnapshot();
        if (entry?.turnId) marks.set(chatId, entry.turnId);
        // Still queued: withdrawn, never sent. On its way (or accepted): cancelled on the server.
        if (entry?.state === 'queued' || entry?.state === 'failed') void client.outbox.discard(submission.operationId).catch(report);
        else void submission.accepted.then((turn) => (marks.set(chatId, turn.id), turn.cancel())).catch(report);
        stop.abort();
        close({ type: 'abort' });
        void reader?.cancel();
      };
      if (abortSignal?.aborted) return stopped();
      abortSignal?.addEventListener('abort', stopped, { once: true });
      let turn: Turn;
      try {
        turn = await submission.accepted;
      } catch (cause) {
        if (stop.signal.aborted) return;
        // Refused for good (a 4xx, or too old): the stream's error chunk shows it, the typed error goes to onError.
        const error = asLifelineError(cause);
        report(error);
        // Another answer to the same calls was sent first: retrying this one can never succeed.
        if (error.serverCode === 'idempotency_key_reused') void client.outbox.discard(submission.operationId).catch(report);
        return close({ type: 'error', errorText: error.message });
      }
      if (stop.signal.aborted) return;
      inner = turnStream(turn, { signal: stop.signal, messageId, onFinished: () => marks.set(chatId, turn.id) });
      reader = inner.getReader();
      for (let next = await reader.read(); !next.done && !closed; next = await reader.read()) controller.enqueue(next.value);
      close();
    },
    cancel() {
      void reader?.cancel();
    },
  });
}
