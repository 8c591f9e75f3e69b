/**
 * One followed turn as a `ReadableStream<UIMessageChunk>` from its first chunk: what the
 * turn holds so far (its snapshot's parts), then every event applied after it, then the
 * end chunk. Cuts, stalls and reloads are the follower's business: they never reach the
 * stream, so it never ends in a network error.
 */
import type { UIMessageChunk } from 'ai';
import { isEnded } from '../core/domain.js';
import type { JsonValue, TurnEvent } from '../protocol/schemas.js';
import type { Turn, TurnSnapshot } from '../types.js';
import { createChunkReplayer, type ChunkReplayer } from '../protocol/ai-sdk/mapping.js';
import { unlessAborted } from './newest-turn.js';

export interface TurnStreamOptions {
  /** Aborting ends the stream without cancelling anything (the turn goes on). */
  signal?: AbortSignal | undefined;
  /** Called once the stream delivered the turn's end chunk. */
  onFinished?: () => void;
  /** What the `start` chunk carries: the turn id, or for a continuation the continued message's id (docs/protocol.md §9). */
  messageId?: string | undefined;
  /**
   * Chunks sent before the turn's own, which then go without their `start`: a resumed
   * continuation replays the whole message it continues, earlier turns first (§9).
   */
  prefix?: readonly UIMessageChunk[] | undefined;
}

/** The end chunk a settled snapshot calls for (a client that gave up has no `turn.end`: its error says why). */
function endFrom(replayer: ChunkReplayer, snapshot: TurnSnapshot): void {
  const error: JsonValue | undefined = snapshot.endError ?? (snapshot.error && { message: snapshot.error.message });
  replayer.end({ status: isEnded(snapshot.status) ? snapshot.status : 'failed', error });
}

/** Streams `turn` from its first chunk; see the module comment. */
export function turnStream(turn: Turn, { signal, onFinished, messageId, prefix }: TurnStreamOptions = {}): ReadableStream<UIMessageChunk> {
  let iterator: AsyncIterator<TurnEvent> | undefined;
  let closed = false;
  return new ReadableStream<UIMessageChunk>({
    async start(controller) {
      let emitted = 0;
      const emit = (chunk: UIMessageChunk): void => {
        emitted++;
        if (!closed && !(prefix?.length && chunk.type === 'start')) controller.enqueue(chunk);
      };
      const close = (): void => {
        if (!closed) controller.close();
        closed = true;
        void iterator?.return?.();
      };
      const replayer = createChunkReplayer(turn.id, emit, messageId);
      if (signal?.aborted) return close();
      for (const chunk of prefix ?? []) controller.enqueue(chunk);
      // Registers for the events applied from now on (synchronously, in this call), so the
      // snapshot read next and those events neither overlap nor leave a hole.
      iterator = turn[Symbol.asyncIterator]();
      let next: Promise<IteratorResult<TurnEvent> | undefined> = iterator.next();
      const snapshot = turn.getSnapshot();
      replayer.parts(snapshot.parts);
      let lastSeq = snapshot.lastSeq;
      let ended = false;
      // Each wait on its own abort listener (unlessAborted): a race per event against one long-lived
      // abort promise would leave a reaction on it per event, each holding its event, until the end.
      for (let result = await unlessAborted(next, signal); result && !result.done; result = await unlessAborted(next, signal)) {
        const event = result.value;
        if (event.seq > lastSeq + 1 && !emitted) {
          // The turn was empty when this stream opened and storage filled it since (a restore
          // applies stored events without announcing them): start from what it holds now.
          const now = turn.getSnapshot();
          replayer.parts(now.parts);
          lastSeq = now.lastSeq;
        }
        if (event.seq > lastSeq) {
          lastSeq = event.seq;
          if (event.type === 'delta') replayer.delta(event);
          else if (event.type === 'part') replayer.part(event.part);
          else if (event.type === 'turn.end') {
            replayer.end(event);
            ended = true;
            break;
          }
        }
        next = iterator.next();
      }
      if (!ended && !signal?.aborted) {
        // Ended before this stream opened, or the client gave up on it: the settled snapshot says how.
        const final = isEnded(turn.getSnapshot().status) ? turn.getSnapshot() : await unlessAborted(turn.completed, signal);
        // A client disposed mid-turn (a page going away) ended nothing: the next page resumes the turn.
        if (final && final.error?.code !== 'disposed') endFrom(replayer, final), (ended = true);
      }
      close();
      if (ended) onFinished?.();
    },
    cancel() {
      closed = true;
      void iterator?.return?.();
    },
  });
}
