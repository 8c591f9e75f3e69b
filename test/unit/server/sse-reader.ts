/**
 * Reads a follow answer the way a client would: eventsource-parser over the raw
 * body, every message kept, with waits on conditions instead of sleeps.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { turnEventSchema, type TurnEvent } from '../../../src/protocol/schemas.js';

export interface SseReader {
  response: Response;
  /** Every message parsed so far, heartbeats included. */
  readonly messages: EventSourceMessage[];
  /** `retry:` values seen, in order. */
  readonly retries: number[];
  /** The body as received. */
  readonly raw: string;
  /** Resolves when the body ended (server closed) or the reader was closed. */
  readonly ended: Promise<void>;
  /** True once the body ended by itself. */
  readonly finished: boolean;
  /** Resolves once `predicate` holds; rejects if the body ends first. */
  until(predicate: (messages: readonly EventSourceMessage[]) => boolean): Promise<void>;
  /** The turn events (messages with an id), validated against the protocol schema. */
  events(): TurnEvent[];
  /** Aborts the request (a client going away). */
  close(): void;
}

/** Opens `url` as an event stream. Non-200 answers are returned with an empty reader. */
export async function openStream(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
  const abort = new AbortController();
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  const messages: EventSourceMessage[] = [];
  const retries: number[] = [];
  let raw = '';
  let finished = false;
  const listeners = new Set<() => void>();
  const notify = (): void => {
    for (const listener of [...listeners]) listener();
  };
  const parser = createParser({
    onEvent: (message) => {
      messages.push(message);
      notify();
    },
    onRetry: (ms) => retries.push(ms),
  });
  const ended = (async () => {
    if (response.body === null) {
      finished = true;
      return;
    }
    const decoder = new TextDecoder();
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const text = decoder.decode(value, { stream: true });
        raw += text;
        parser.feed(text);
      }
      finished = true;
    } catch {
      // aborted by close() or cut by the server
    } finally {
      notify();
    }
  })();

  return {
    response,
    messages,
    retries,
    get raw() {
      return raw;
    },
    ended,
    get finished() {
      return finished;
    },
    until(predicate) {
      return new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (predicate(messages)) {
            listeners.delete(check);
            resolve();
          } else if (finished || abort.signal.aborted) {
            listeners.delete(check);
            reject(new Error(`stream ended before the condition held (${messages.length} messages)`));
          }
        };
        listeners.add(check);
        check();
        void ended.then(check);
      });
    },
    events() {
      return messages.filter((message) => message.id !== undefined).map((message) => turnEventSchema.parse(JSON.parse(message.data)));
    },
    close() {
      abort.abort();
    },
  };
}

/** The highest seq among the messages, 0 when none. */
export function lastSeq(messages: readonly EventSourceMessage[]): number {
  let seq = 0;
  for (const message of messages) if (message.id !== undefined) seq = Math.max(seq, Number(message.id));
  return seq;
}
