/**
 * The soak's server side: the reference handler over a memory turn log that records
 * which turns each submission and idempotency key made, the fault injector in front of
 * it, and the seeded fault proxy in front of everything (stream cuts and stalls).
 *
 * The server stays in this process across "restarts": the turn log, the handler and its
 * producers live on; only the HTTP listener and its sockets are closed and a new one is
 * started on the same port, so producers keep logging while nobody can connect.
 */
import { startPageServer, type PageServer } from '../../test/browser/fixtures/page-server.js';
import { isStreamRequest, startFaultProxy, type FaultPlan, type FaultProxy, type ProxiedConnection, type RequestInfo } from '../../test/fixtures/fault-proxy.js';
import { createLifelineHandler } from '../../src/server/http/handler.js';
import { createMemoryTurnLog } from '../../src/server/log/memory/index.js';
import { toNodeListener } from '../../src/server/node/index.js';
import type { TurnLog } from '../../src/server/log/turn-log.js';
import { soakAgent, soakIndexOf } from './agent.js';
import type { FaultBook } from './fault-book.js';
import { withInjectedFaults, type InjectorLog } from './injector.js';
import type { Fault, Schedule } from './schedule.js';

const HEARTBEAT_MS = 500;

export interface SoakServerOptions {
  schedule: Schedule;
  book: FaultBook;
  /** A soak submission made a turn (the first one of a submission is the one tab A follows). */
  onTurnCreated(index: number, turnId: string): void;
  /** Server-wide faults (restart, reload, offline, a second tab) now due, by the seq just logged. */
  onGlobalFaults(faults: Fault[]): void;
  /** Undone in reverse order however the run ends. */
  teardown: (() => unknown)[];
}

export interface SoakServer {
  readonly turnLog: Pick<TurnLog, 'read'>;
  /** The turns each soak submission (by index) created, in order. */
  readonly turnsBySubmission: Map<number, string[]>;
  /** The turns each `principal/idempotency key` completed with. */
  readonly turnsByKey: Map<string, Set<string>>;
  readonly serverErrors: string[];
  readonly stats: InjectorLog;
  readonly proxy: FaultProxy;
  /** Closes the listener and its sockets, waits `pauseMs`, listens again on the same port. */
  restart(pauseMs: number): Promise<void>;
}

/** A turn log that tells the soak about turns, logged seqs (for due global faults) and completed keys. */
function recordingLog(memoryLog: TurnLog, options: SoakServerOptions, server: Pick<SoakServer, 'turnsBySubmission' | 'turnsByKey'>): TurnLog {
  const { book } = options;
  return new Proxy(memoryLog, {
    get(target, property, receiver) {
      if (property === 'createTurn') {
        return async (turn: Parameters<TurnLog['createTurn']>[0]) => {
          const created = await target.createTurn(turn);
          const index = soakIndexOf(turn.content);
          if (index !== undefined) {
            server.turnsBySubmission.set(index, [...(server.turnsBySubmission.get(index) ?? []), created.id]);
            book.bind(index, created.id);
            options.onTurnCreated(index, created.id);
          }
          return created;
        };
      }
      if (property === 'append') {
        return async (turnId: string, event: Parameters<TurnLog['append']>[1]) => {
          const logged = await target.append(turnId, event);
          const due = book.takeGlobal(turnId, logged.seq);
          if (due.length > 0) options.onGlobalFaults(due);
          return logged;
        };
      }
      if (property === 'completeIdempotency') {
        return async (...args: Parameters<TurnLog['completeIdempotency']>) => {
          await target.completeIdempotency(...args);
          const [principal, key, record] = args;
          if (record.turnId !== undefined) {
            const turns = server.turnsByKey.get(`${principal}/${key}`) ?? new Set<string>();
            turns.add(record.turnId);
            server.turnsByKey.set(`${principal}/${key}`, turns);
          }
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A proxy-level fault planned for a stream request, until its connection shows whether it acted. */
interface Tracked {
  fault: Fault;
  request: RequestInfo;
  connection: ProxiedConnection;
}

function planFor(fault: Fault): FaultPlan {
  switch (fault.kind) {
    case 'reset':
      return { kind: 'cut', afterBytes: fault.atByte ?? 0, how: 'rst' };
    case 'close':
      return { kind: 'cut', afterBytes: fault.atByte ?? 0, how: 'fin' };
    default:
      return { kind: 'stall', afterBytes: fault.atByte ?? 0 };
  }
}

/**
 * The fault proxy in front of `targetPort`: each stream request takes its turn's next
 * stream fault; seq rewrites go to the injector (`rewrites`), cuts and stalls to the proxy,
 * tracked until they acted (fired) or their connection ended first (given back).
 */
async function startStreamFaults(targetPort: number, book: FaultBook, rewrites: Map<string, Fault>, teardown: (() => unknown)[]): Promise<FaultProxy> {
  const tracked: Tracked[] = [];
  const proxy: FaultProxy = await startFaultProxy({
    targetPort,
    plan(request) {
      if (!isStreamRequest(request)) return { kind: 'pass' };
      const turnId = /\/turns\/([^/?]+)\/events/.exec(request.path)?.[1] ?? '';
      const fault = book.takeStream(turnId);
      if (!fault) return { kind: 'pass' };
      if (fault.kind === 'duplicate-seq' || fault.kind === 'gap-seq') {
        const previous = rewrites.get(turnId);
        if (previous) book.giveBack(previous);
        rewrites.set(turnId, fault);
        return { kind: 'pass' };
      }
      // The proxy sets the connection's request before asking for its plan.
      const connection = [...proxy.connections].find((candidate) => candidate.request === request);
      if (!connection) {
        book.giveBack(fault);
        return { kind: 'pass' };
      }
      tracked.push({ fault, request, connection });
      return planFor(fault);
    },
  });
  /** Settles proxy-level faults: fired once the connection passed the planned byte, given back if it ended first. */
  const settleTracked = (): void => {
    for (let i = tracked.length - 1; i >= 0; i--) {
      const { fault, request, connection } = tracked[i]!;
      const acted = connection.stalled || connection.bytesDown >= (fault.atByte ?? 0);
      const over = connection.request !== request || !proxy.connections.has(connection);
      if (!acted && !over) continue;
      tracked.splice(i, 1);
      if (!acted) book.giveBack(fault);
      else if (fault.kind === 'replay-503' || fault.kind === 'replay-429') book.armReplay(fault);
      else book.fired(fault);
    }
  };
  teardown.push(() => proxy.close());
  const settler = setInterval(settleTracked, 20);
  teardown.push(() => clearInterval(settler));
  return proxy;
}

export async function startSoakServer(options: SoakServerOptions): Promise<SoakServer> {
  const { schedule, book, teardown } = options;
  const memoryLog = createMemoryTurnLog();
  teardown.push(() => memoryLog.close());
  const records = { turnsBySubmission: new Map<number, string[]>(), turnsByKey: new Map<string, Set<string>>() };
  const serverErrors: string[] = [];
  const handler = createLifelineHandler({
    agent: soakAgent({ plan: (index) => schedule.turns[index], pending: (index) => book.pending(index) }),
    store: recordingLog(memoryLog, options, records),
    basePath: '/api',
    heartbeatMs: HEARTBEAT_MS,
    onError: (error, context) => serverErrors.push(`${context.phase}${context.turnId ? ` ${context.turnId}` : ''}: ${String(error)}`),
  });
  teardown.push(() => handler.close());
  const stats: InjectorLog = { streams: 0, replays: 0, submits: 0 };
  const rewrites = new Map<string, Fault>();
  const listener = toNodeListener(withInjectedFaults(handler, book, stats, rewrites), {
    onError: (error) => serverErrors.push(`listener: ${String(error)}`),
  });
  let pageServer: PageServer = await startPageServer(listener);
  teardown.push(() => pageServer.close());
  const proxy = await startStreamFaults(pageServer.port, book, rewrites, teardown);
  return {
    turnLog: memoryLog,
    ...records,
    serverErrors,
    stats,
    proxy,
    async restart(pauseMs) {
      const port = pageServer.port;
      await pageServer.close();
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
      pageServer = await startPageServer(listener, { port });
    },
  };
}
