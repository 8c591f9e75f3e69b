import { sha256Hex } from '../../protocol/integrity.js';
import type { JsonValue, TurnEndStatus } from '../../protocol/schemas.js';
import type { Agent, AgentEvent } from './agent.js';
import { conversationReader } from './conversation.js';
import { checkTurnLimits, countLogged, toLogEvent, TurnFailure, type LoggedSoFar, type ProducerLimits } from './agent-events.js';
import { isExpiredTurn, type StoredTurn, type TurnLog } from '../log/turn-log.js';
import { AppendQueue } from './append-queue.js';
import type { ServerMetrics } from '../metrics.js';
import { ABORTED, AbortablePull } from './abortable-pull.js';

/** Where a server-side failure happened, for `onError`. */
export type ServerErrorPhase = 'agent' | 'store' | 'request';

/** Receives failures the server handled but an operator should see. */
export type ServerErrorReporter = (error: unknown, context: { phase: ServerErrorPhase; turnId?: string }) => void;

/** An operator's end of a live turn (docs/protocol.md section 11), with the reason logged in its `turn.end`. */
export interface OperatorStop {
  kind: 'operator';
  reason: string;
}

/** Why a producer was stopped from outside. */
export type StopReason = 'cancel' | 'shutdown' | OperatorStop;

function isOperatorStop(reason: unknown): reason is OperatorStop {
  return typeof reason === 'object' && reason !== null && (reason as { kind?: unknown }).kind === 'operator';
}

export interface ProducerDeps {
  log: TurnLog;
  agent: Agent;
  limits: ProducerLimits;
  /** How often a live turn checks the log for a cancel requested on another instance, ms. */
  cancelPollMs: number;
  report: ServerErrorReporter;
  /** Counts turns started and ended here (http/metrics.ts); default: nothing counted. */
  metrics?: Pick<ServerMetrics, 'started' | 'ended'>;
}


/** The turn log failed while the agent was being read: not the agent's fault. */
class StoreFailure extends Error {
  constructor(cause: unknown) {
    super('The turn log failed.', { cause });
  }
}


/** What `#produce` logged, and the error for `turn.end` when the agent failed. */
interface Produced extends LoggedSoFar {
  failure?: JsonValue;
}

/** The `turn.end` status and error of a run: a stop from outside outranks how the agent ended. */
function endOf(signal: AbortSignal, failure: JsonValue | undefined): { status: TurnEndStatus; error?: JsonValue } {
  if (signal.aborted) {
    if (isOperatorStop(signal.reason)) return { status: 'failed', error: { code: 'ended_by_operator', message: signal.reason.reason } };
    return signal.reason === 'shutdown'
      ? { status: 'failed', error: { code: 'server_shutdown', message: 'The server shut down while producing this turn.' } }
      : { status: 'cancelled' };
  }
  return failure === undefined ? { status: 'complete' } : { status: 'failed', error: failure };
}

function stopIterator(iterator: AsyncIterator<AgentEvent> | undefined): void {
  try {
    iterator?.return?.().catch(() => undefined);
  } catch {
    // an iterator whose return() throws synchronously: nothing more to stop
  }
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

  /**
   * Starts producing `turn` in the background; `headers` are the submit request's (the
   * agent's, never stored). Answers a promise that fulfils once the turn's `turn.end` is
   * logged, or its log gave up; it never rejects (failures go to `report`).
   */
  start(turn: StoredTurn, headers: Headers): Promise<void> {
    const controller = new AbortController();
    this.#deps.metrics?.started();
    const done = this.#run(turn, headers, controller).finally(() => this.#live.delete(turn.id));
    this.#live.set(turn.id, { controller, done });
    return done;
  }

  /** Stops a turn produced by this instance; false when it is not produced here. */
  stop(turnId: string, reason: StopReason): boolean {
    const live = this.#live.get(turnId);
    if (!live) return false;
    live.controller.abort(reason);
    return true;
  }

  /**
   * Lets the live turns run to their own end for up to `drainMs`, then stops the rest
   * (`failed`, code `server_shutdown`) and waits for their `turn.end`.
   */
  async drain(drainMs: number): Promise<void> {
    const all = [...this.#live.values()];
    if (all.length > 0 && drainMs > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const over = new Promise<void>((resolve) => (timer = setTimeout(resolve, drainMs)));
      await Promise.race([Promise.all(all.map((live) => live.done)), over]);
      clearTimeout(timer);
    }
    await this.stopAll();
  }

  /** Stops every live turn (each ends `failed`, code `server_shutdown`) and waits for their `turn.end`. */
  async stopAll(): Promise<void> {
    const all = [...this.#live.values()];
    for (const live of all) live.controller.abort('shutdown' satisfies StopReason);
    await Promise.all(all.map((live) => live.done));
  }

  async #run(turn: StoredTurn, headers: Headers, controller: AbortController): Promise<void> {
    const { log, report } = this.#deps;
    const poll = this.#watchForCancel(turn.id, controller);
    try {
      await log.append(turn.id, {
        type: 'turn.start',
        messageId: turn.messageId,
        conversationId: turn.conversationId,
        createdAt: turn.createdAt,
      });
      const queue = new AppendQueue(log, turn.id);
      const produced = await this.#produce(turn, headers, controller, queue);
      const { status, error } = endOf(controller.signal, produced.failure);
      const textSha256 = await sha256Hex(produced.texts.join(''));
      await queue.push({
        type: 'turn.end',
        status,
        ...(error === undefined ? {} : { error }),
        textLength: produced.textLength,
        textSha256,
      });
      await queue.flush();
      this.#deps.metrics?.ended(status);
    } catch (cause) {
      // The log itself failed: report it, then try once to end the turn so followers stop waiting.
      report(cause instanceof StoreFailure ? cause.cause : cause, { phase: 'store', turnId: turn.id });
      controller.abort('store');
      await this.#endAfterStoreFailure(turn.id);
    } finally {
      clearInterval(poll);
    }
  }

  /** A cancel or an operator's end may be requested on another instance: only the log tells this one. */
  #watchForCancel(turnId: string, controller: AbortController): ReturnType<typeof setInterval> {
    const { log } = this.#deps;
    const asked = async (): Promise<StopReason | undefined> => {
      if (!log.stopRequest) return (await log.isCancelRequested(turnId)) ? 'cancel' : undefined;
      const stop = await log.stopRequest(turnId);
      return stop === undefined ? undefined : stop.kind === 'cancel' ? 'cancel' : stop;
    };
    const poll = setInterval(() => {
      asked().then(
        (reason) => {
          if (reason !== undefined) controller.abort(reason);
        },
        (cause: unknown) => this.#deps.report(cause, { phase: 'store', turnId }),
      );
    }, this.#deps.cancelPollMs);
    (poll as { unref?: () => void }).unref?.();
    return poll;
  }

  /**
   * Runs the agent until it returns, fails or is stopped, logging what it yields. Answers
   * what reached the log and, when the agent failed, the error for `turn.end`; a failing
   * log is thrown (as `StoreFailure`) for `#run` to handle.
   */
  async #produce(turn: StoredTurn, headers: Headers, controller: AbortController, queue: AppendQueue): Promise<Produced> {
    const { agent, report } = this.#deps;
    const { signal } = controller;
    const logged: LoggedSoFar = { events: 1, texts: [], textLength: 0 };
    let iterator: AsyncIterator<AgentEvent> | undefined;
    try {
      iterator = agent({
        turnId: turn.id,
        conversationId: turn.conversationId,
        messageId: turn.messageId,
        content: turn.content,
        context: turn.context,
        headers,
        continues: turn.continues,
        principal: turn.principal,
        conversation: conversationReader(this.#deps.log, { turnId: turn.id, conversationId: turn.conversationId, principal: turn.principal }),
        signal,
      })[Symbol.asyncIterator]();
      await this.#logAgentEvents(queue, iterator, signal, logged);
    } catch (cause) {
      if (cause instanceof StoreFailure) {
        // Stop the agent too: nothing it yields could be logged.
        controller.abort('store');
        throw cause;
      }
      if (!signal.aborted) {
        report(cause, { phase: 'agent', turnId: turn.id });
        // The agent's own message may hold internals; clients get a stable code only.
        const failure = cause instanceof TurnFailure ? { code: cause.code, message: cause.message } : { code: 'agent_failed', message: 'The agent failed while producing this turn.' };
        return { ...logged, failure };
      }
    } finally {
      // Whatever the agent is doing, it no longer feeds this turn.
      if (signal.aborted) stopIterator(iterator);
    }
    return logged;
  }

  /**
   * Pulls `iterator` and queues each event it yields for the log, within the turn's caps,
   * until it is done or `signal` aborts. What is queued is counted as logged: if the log
   * fails, the turn's end is rebuilt from what the log holds (`#endAfterStoreFailure`).
   */
  async #logAgentEvents(queue: AppendQueue, iterator: AsyncIterator<AgentEvent>, signal: AbortSignal, logged: LoggedSoFar): Promise<void> {
    const { limits } = this.#deps;
    const pull = new AbortablePull(signal);
    for (;;) {
      const next = await pull.next(iterator);
      if (next === ABORTED || next.done) return;
      const event = toLogEvent(next.value, limits);
      checkTurnLimits(event, logged, limits);
      if (signal.aborted) return;
      try {
        await queue.push(event);
      } catch (cause) {
        throw new StoreFailure(cause);
      }
      countLogged(event, logged);
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
