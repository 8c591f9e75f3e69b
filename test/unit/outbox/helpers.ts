/**
 * Test doubles for the outbox: a storage that records what it holds (and can be made to
 * fail or hang), an in-process Web Locks manager, a switchable network, a scripted fetch
 * and a diagnostics recorder that can be awaited.
 */
import { setImmediate as turn } from 'node:timers/promises';
import { StorageError } from '../../../src/errors.js';
import type { NetworkMonitor, OutboxChannel, OutboxDeps, OutboxLocks, OutboxStorage } from '../../../src/outbox/outbox.js';
import type { LoadResult, OutboxRecord } from '../../../src/storage/store.js';
import { resolveRetryPolicy, type RetryOptions } from '../../../src/core/backoff.js';
import { headersResolver } from '../../../src/transport/http.js';
import { realClock, realRandom, realTimers } from '../../../src/ports/index.js';
import type { Diagnostic, HeadersInput } from '../../../src/types.js';

/** Outbox storage in memory, shared by every "tab" given it; values are cloned like IndexedDB does. */
export interface FakeStorage extends OutboxStorage {
  readonly rows: Map<string, OutboxRecord>;
  readonly leases: Map<string, { owner: string; expiresAt: number }>;
  /** Makes the next `putOutbox` calls reject. */
  failPuts: boolean;
  /** A view whose lease calls never settle (a frozen tab). */
  frozenLeases(): OutboxStorage;
}

export function createFakeStorage(): FakeStorage {
  const rows = new Map<string, OutboxRecord>();
  const leases = new Map<string, { owner: string; expiresAt: number }>();
  const storage: FakeStorage = {
    rows,
    leases,
    failPuts: false,
    async loadOutbox(): Promise<LoadResult<OutboxRecord>> {
      await turn();
      return { items: [...rows.values()].map((row) => structuredClone(row)), skipped: [] };
    },
    async putOutbox(record) {
      await turn();
      if (storage.failPuts) throw new StorageError('storage_quota_exceeded', 'quota');
      rows.set(record.operationId, structuredClone(record));
    },
    async deleteOutbox(operationId) {
      await turn();
      rows.delete(operationId);
    },
    async tryLease(name, owner, ttlMs, now) {
      await turn();
      const held = leases.get(name);
      if (held === undefined || held.owner === owner || held.expiresAt <= now) {
        leases.set(name, { owner, expiresAt: now + ttlMs });
        return true;
      }
      return false;
    },
    async releaseLease(name, owner) {
      await turn();
      if (leases.get(name)?.owner === owner) leases.delete(name);
    },
    frozenLeases() {
      let first = true;
      return {
        ...storage,
        loadOutbox: () => storage.loadOutbox(),
        putOutbox: (record) => storage.putOutbox(record),
        deleteOutbox: (id) => storage.deleteOutbox(id),
        tryLease: (...args) => {
          if (first) {
            first = false;
            return storage.tryLease(...args);
          }
          return new Promise<boolean>(() => undefined);
        },
        releaseLease: () => new Promise<void>(() => undefined),
      };
    },
  };
  return storage;
}

/** An exclusive, FIFO lock manager shared by every "tab" given it (one browser context). */
export function createFakeLocks(): OutboxLocks & { readonly holders: number } {
  const queues = new Map<string, Array<() => void>>();
  const held = new Set<string>();
  const next = (name: string): void => {
    const waiter = queues.get(name)?.shift();
    if (waiter) waiter();
    else held.delete(name);
  };
  return {
    get holders() {
      return held.size;
    },
    request(name, options, callback) {
      return new Promise<unknown>((resolve, reject) => {
        const run = (): void => {
          options.signal?.removeEventListener('abort', onAbort);
          callback().then(resolve, reject).finally(() => next(name));
        };
        const onAbort = (): void => {
          const queue = queues.get(name) ?? [];
          const index = queue.indexOf(run);
          if (index >= 0) queue.splice(index, 1);
          reject(options.signal?.reason);
        };
        if (options.signal?.aborted) return reject(options.signal.reason);
        if (!held.has(name)) {
          held.add(name);
          run();
          return;
        }
        options.signal?.addEventListener('abort', onAbort, { once: true });
        const queue = queues.get(name) ?? [];
        queue.push(run);
        queues.set(name, queue);
      });
    },
  };
}

export interface FakeNetwork extends NetworkMonitor {
  set(online: boolean): void;
}

export function createFakeNetwork(online = true): FakeNetwork {
  let state = online;
  const listeners = new Set<(online: boolean) => void>();
  return {
    online: () => state,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    set(next) {
      state = next;
      for (const listener of listeners) listener(next);
    },
  };
}

/** One POST as the fake fetch saw it. */
export interface Call {
  url: string;
  key: string;
  headers: Headers;
  body: { content: unknown };
  /** Which "tab" sent it. */
  tab: string;
  signal: AbortSignal;
}

export type Responder = (call: Call) => Response | Promise<Response>;

/** A fetch that logs every call and answers with `responder`. */
export function createFakeFetch(responder: Responder, tab = 'a'): typeof fetch & { calls: Call[]; responder: Responder } {
  const calls: Call[] = [];
  const fake = Object.assign(
    async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
      const headers = new Headers(init?.headers);
      const call: Call = {
        url: String(input),
        key: headers.get('idempotency-key') ?? '',
        headers,
        body: JSON.parse(String(init?.body)) as { content: unknown },
        tab,
        signal: init?.signal ?? new AbortController().signal,
      };
      calls.push(call);
      return fake.responder(call);
    },
    { calls, responder },
  );
  return fake;
}

let seq = 0;
/** A valid `202` answer for a call. */
export function accepted(call: Call, status = 202): Response {
  seq += 1;
  const conversationId = call.url.split('/conversations/')[1]?.split('/')[0] ?? 'c';
  return Response.json(
    { turnId: `turn_${seq}`, messageId: `msg_${seq}`, conversationId, status: 'pending' },
    { status, headers: status === 200 ? { 'idempotent-replayed': 'true' } : {} },
  );
}

export function errorAnswer(status: number, code = 'some_error', headers: Record<string, string> = {}): Response {
  return Response.json({ error: { code, message: `status ${status}` } }, { status, headers });
}

/** A fetch answer that never comes unless the request is aborted. */
export function hang(call: Call): Promise<Response> {
  return new Promise((_, reject) => {
    call.signal.addEventListener('abort', () => reject(call.signal.reason), { once: true });
  });
}

/** Records diagnostics; `next(type)` resolves with the next one of that type. */
export function createRecorder(): {
  list: Diagnostic[];
  emit: (diagnostic: Diagnostic) => void;
  of<T extends Diagnostic['type']>(type: T): Extract<Diagnostic, { type: T }>[];
} {
  const list: Diagnostic[] = [];
  return {
    list,
    emit: (diagnostic) => list.push(diagnostic),
    of: <T extends Diagnostic['type']>(type: T) => list.filter((d): d is Extract<Diagnostic, { type: T }> => d.type === type),
  };
}

/**
 * Lets pending promise chains and I/O settle until `condition` holds, without moving
 * (fake) time. Fails after at least 500 event-loop turns and 5 s of real time: work on
 * the thread pool (`crypto.subtle`, which derives a receipt's key) is not bound to turns,
 * and a loaded machine (the full suite on two cores) makes it slower. `process.hrtime`
 * is not one of the clocks fake timers replace.
 */
export async function until(condition: () => boolean, what = 'condition'): Promise<void> {
  const start = process.hrtime.bigint();
  for (let i = 0; ; i++) {
    if (condition()) return;
    if (i >= 500 && process.hrtime.bigint() - start > 5_000_000_000n) break;
    await turn();
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Lets everything that can settle without time passing settle. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await turn();
}

/** A BroadcastChannel factory unique to one test (Node delivers between instances in one process). */
export function channelFactory(): (name: string) => OutboxChannel {
  const suffix = `${process.pid}-${++seq}-${Math.random()}`;
  return (name) => new BroadcastChannel(`${name}:${suffix}`) as unknown as OutboxChannel;
}

/** What a test sets: any dep, with `retry` and `headers` as an app writes them (resolved as the client does). */
export type TestDeps = Partial<Omit<OutboxDeps, 'retry' | 'headers'>> & { retry?: RetryOptions; headers?: HeadersInput };

/** Deps shared by most tests: in-process locks, no channel, always online, global fetch and clock. */
export function baseDeps({ retry, headers, ...overrides }: TestDeps & Pick<OutboxDeps, 'storage' | 'emit'>): OutboxDeps {
  return {
    baseUrl: 'http://lifeline.test/api',
    fetch: (input, init) => fetch(input, init),
    clock: realClock,
    timers: realTimers,
    newId: realRandom.id,
    namespace: 'default',
    onAccepted: () => undefined,
    locks: createFakeLocks(),
    channel: null,
    network: null,
    random: () => 0.5,
    ...overrides,
    retry: resolveRetryPolicy(retry),
    headers: headersResolver(headers),
  };
}
