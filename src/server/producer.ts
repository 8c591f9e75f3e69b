import { sha256Hex } from '../protocol/integrity.js';
import { actionEventSchema, type JsonValue, type MessageContent, type TurnEndStatus } from '../protocol/schemas.js';
import type { Agent, AgentEvent } from './agent.js';
import { isExpiredTurn, type NewTurnEvent, type StoredTurn, type TurnLog } from './turn-log.js';

/** Where a server-side failure happened, for `onError`. */
export type ServerErrorPhase = 'agent' | 'store' | 'request';

/** Receives failures the server handled but an operator should see. */
export type ServerErrorReporter = (error: unknown, context: { phase: ServerErrorPhase; turnId?: string }) => void;

/** Per-turn caps; a turn that would exceed one ends `failed` with code `turn_too_large`. */
export interface ProducerLimits {
  maxEventsPerTurn: number;
  maxTextPerTurn: number;
  maxEventSize: number;
}

/** Why a producer was stopped from outside. */
export type StopReason = 'cancel' | 'shutdown';

export interface ProducerDeps {
  log: TurnLog;
  agent: Agent;
  limits: ProducerLimits;
  /** How often a live turn checks the log for a cancel requested on another instance, ms. */
  cancelPollMs: number;
  report: ServerErrorReporter;
}

const ABORTED = Symbol('aborted');

/** A failure that ends the turn `failed` with this error object on `turn.end`. */
class TurnFailure extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** The turn log failed while the agent was being read: not the agent's fault. */
class StoreFailure extends Error {
  constructor(cause: unknown) {
    super('The turn log failed.', { cause });
  }
}

function abortPromise(signal: AbortSignal): Promise<typeof ABORTED> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(ABORTED);
    else signal.addEventListener('abort', () => resolve(ABORTED), { once: true });
  });
}

/** JSON-escaped length is at most 6× the raw length; only long texts need the exact count. */
function deltaDataSize(text: string, cap: number): number {
  const overhead = 80;
  return text.length * 6 + overhead <= cap ? text.length + overhead : JSON.stringify(text).length + overhead;
}

/** Validates what an untrusted agent yielded and turns it into a loggable event. */
function toLogEvent(event: AgentEvent, limits: ProducerLimits): NewTurnEvent {
  if (typeof event !== 'object' || event === null) throw new TurnFailure('invalid_agent_event', 'The agent yielded a non-object.');
  if (event.type === 'delta') {
    if (typeof event.text !== 'string') throw new TurnFailure('invalid_agent_event', 'A delta must carry a string `text`.');
    if (deltaDataSize(event.text, limits.maxEventSize) > limits.maxEventSize) {
      throw new TurnFailure('turn_too_large', `A delta exceeds the event size limit of ${limits.maxEventSize}.`);
    }
    return { type: 'delta', text: event.text };
  }
  if (event.type === 'action') {
    const action: NewTurnEvent = {
      type: 'action',
      callId: event.callId,
      name: event.name,
      status: event.status,
      ...(event.input === undefined ? {} : { input: event.input }),
      ...(event.output === undefined ? {} : { output: event.output }),
      ...(event.error === undefined ? {} : { error: event.error }),
    };
    const checked = actionEventSchema.safeParse({ turnId: 'x', seq: 1, ...action });
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new TurnFailure('invalid_agent_event', `Invalid action event: ${issue ? `${issue.path.join('.')}: ${issue.message}` : 'bad shape'}.`);
    }
    if (JSON.stringify(action).length + 80 > limits.maxEventSize) {
      throw new TurnFailure('turn_too_large', `An action exceeds the event size limit of ${limits.maxEventSize}.`);
    }
    return action;
  }
  throw new TurnFailure('invalid_agent_event', `Unknown agent event type ${JSON.stringify((event as { type?: unknown }).type)}.`);
}

/**
 * Runs turns: pulls the agent, logs what it yields, and always ends the log with
 * exactly one `turn.end`. Runs apart from any HTTP request, so a turn keeps being
 * produced while no client is connected.
 */
export class TurnProducer {
  readonly #deps: ProducerDeps;
  readonly #live = new Map<string, { controller: AbortController; done: Promise<void> }>();

  constructor(deps: ProducerDeps) {
    this.#deps = deps;
  }

  /** Turns being produced by this instance. */
  get liveCount(): number {
    return this.#live.size;
  }

  /** Starts producing `turn` in the background. */
  start(turn: StoredTurn, content: MessageContent): void {
    const controller = new AbortController();
    const done = this.#run(turn, content, controller).finally(() => this.#live.delete(turn.id));
    this.#live.set(turn.id, { controller, done });
  }

  /** Stops a turn produced by this instance; false when it is not produced here. */
  stop(turnId: string, reason: StopReason): boolean {
    const live = this.#live.get(turnId);
    if (!live) return false;
    live.controller.abort(reason);
    return true;
  }

  /** Stops every live turn (each ends `failed`, code `server_shutdown`) and waits for their `turn.end`. */
  async stopAll(): Promise<void> {
    const all = [...this.#live.values()];
    for (const live of all) live.controller.abort('shutdown' satisfies StopReason);
    await Promise.all(all.map((live) => live.done));
  }

  async #run(turn: StoredTurn, content: MessageContent, controller: AbortController): Promise<void> {
    const { log, agent, limits, report } = this.#deps;
    const { signal } = controller;
    const parts: string[] = [];
    let textLength = 0;
    let logged = 0;
    let status: TurnEndStatus = 'complete';
    let error: JsonValue | undefined;

    const poll = setInterval(() => {
      log.isCancelRequested(turn.id).then(
        (requested) => {
          if (requested) controller.abort('cancel' satisfies StopReason);
        },
        (cause: unknown) => report(cause, { phase: 'store', turnId: turn.id }),
      );
    }, this.#deps.cancelPollMs);
    (poll as { unref?: () => void }).unref?.();

    try {
      await log.append(turn.id, {
        type: 'turn.start',
        messageId: turn.messageId,
        conversationId: turn.conversationId,
        createdAt: turn.createdAt,
      });
      logged = 1;
      const aborted = abortPromise(signal);
      let iterator: AsyncIterator<AgentEvent> | undefined;
      try {
        iterator = agent({
          turnId: turn.id,
          conversationId: turn.conversationId,
          messageId: turn.messageId,
          content,
          principal: turn.principal,
          signal,
        })[Symbol.asyncIterator]();
        for (;;) {
          // Race the agent against abort: an agent stuck in an await must not delay a cancel.
          const next = await Promise.race([iterator.next(), aborted]);
          if (next === ABORTED) break;
          if (next.done) break;
          const event = toLogEvent(next.value, limits);
          if (event.type === 'delta') {
            if (textLength + event.text.length > limits.maxTextPerTurn) {
              throw new TurnFailure('turn_too_large', `The turn's text exceeds the limit of ${limits.maxTextPerTurn} code units.`);
            }
          }
          // One slot stays free for turn.end.
          if (logged + 2 > limits.maxEventsPerTurn) {
            throw new TurnFailure('turn_too_large', `The turn exceeds the limit of ${limits.maxEventsPerTurn} events.`);
          }
          if (signal.aborted) break;
          try {
            await log.append(turn.id, event);
          } catch (cause) {
            throw new StoreFailure(cause);
          }
          logged++;
          if (event.type === 'delta') {
            parts.push(event.text);
            textLength += event.text.length;
          }
        }
      } catch (cause) {
        if (cause instanceof StoreFailure) {
          // Stop the agent too: nothing it yields could be logged.
          controller.abort('store');
          throw cause;
        }
        if (!signal.aborted) {
          status = 'failed';
          if (cause instanceof TurnFailure) {
            error = { code: cause.code, message: cause.message };
            report(cause, { phase: 'agent', turnId: turn.id });
          } else {
            // The agent's own message may hold internals; clients get a stable code only.
            error = { code: 'agent_failed', message: 'The agent failed while producing this turn.' };
            report(cause, { phase: 'agent', turnId: turn.id });
          }
        }
      } finally {
        if (signal.aborted) {
          // Whatever the agent is doing, it no longer feeds this turn.
          try {
            iterator?.return?.().catch(() => undefined);
          } catch {
            // an iterator whose return() throws synchronously: nothing more to stop
          }
        }
      }
      if (signal.aborted) {
        if (signal.reason === 'shutdown') {
          status = 'failed';
          error = { code: 'server_shutdown', message: 'The server shut down while producing this turn.' };
        } else {
          status = 'cancelled';
          error = undefined;
        }
      }
      const textSha256 = await sha256Hex(parts.join(''));
      await log.append(turn.id, {
        type: 'turn.end',
        status,
        ...(error === undefined ? {} : { error }),
        textLength,
        textSha256,
      });
    } catch (cause) {
      // The log itself failed: report it, then try once to end the turn so followers stop waiting.
      report(cause instanceof StoreFailure ? cause.cause : cause, { phase: 'store', turnId: turn.id });
      controller.abort('store');
      await this.#endAfterStoreFailure(turn.id);
    } finally {
      clearInterval(poll);
    }
  }

  /** Best effort: a store that failed once may work again a moment later. */
  async #endAfterStoreFailure(turnId: string): Promise<void> {
    try {
      const current = await this.#deps.log.getTurn(turnId);
      if (current === undefined || isExpiredTurn(current) || current.endedAt !== undefined) return;
      // The text hash covers only what reached the log, read page by page (pages are bounded in bytes).
      let text = '';
      for (let after = 0, more = true; more; ) {
        const page = await this.#deps.log.read(turnId, after, 10_000);
        for (const event of page.events) if (event.type === 'delta') text += event.text;
        after = page.events.at(-1)?.seq ?? after;
        more = page.hasMore && page.events.length > 0;
      }
      await this.#deps.log.append(turnId, {
        type: 'turn.end',
        status: 'failed',
        error: { code: 'store_failed', message: 'The turn log failed while producing this turn.' },
        textLength: text.length,
        textSha256: await sha256Hex(text),
      });
    } catch (cause) {
      this.#deps.report(cause, { phase: 'store', turnId });
    }
  }
}
