import { createHash, randomUUID } from 'node:crypto';
import type { ChainableCommander, Redis } from 'ioredis';
import { LifelineError } from '../errors.js';
import { sha256Hex } from '../protocol/integrity.js';
import type { ServerTurnStatus, TurnEvent } from '../protocol/schemas.js';
import type { ServerErrorReporter } from './producer.js';
import { createStreamWaiter, type StreamWaiter } from './redis-stream-waiter.js';
import { pendingTurn, type EventPage, type IdempotencyRecord, type NewTurnEvent, type StoredTurn, type TurnLog } from './turn-log.js';

/** Options of {@link createRedisTurnLog}. Give exactly one of `client` and `url`. */
export interface RedisTurnLogOptions {
  /**
   * An ioredis client (standalone or Sentinel; Redis Cluster is not supported). The log
   * sends its commands through it and never closes it; it opens one more connection of
   * its own (`client.duplicate()`) for blocking reads. Its default `replyMapping`
   * (`'legacy'`) is required.
   */
  client?: Redis;
  /** A Redis URL (`redis://…`, `rediss://…`); the log connects and `close()` disconnects. No default: give this or `client`. */
  url?: string;
  /** Prepended to every key the log writes, so several apps can share one Redis. Default `'lifeline:'`. */
  keyPrefix?: string;
  /**
   * How long an ended turn's log, and the idempotency key that created it, are kept
   * after `turn.end`, ms. Default 24 h. For one more retention period a tombstone makes
   * the turn answer `410 turn_expired` rather than `404`. A live turn never expires while
   * its producer holds the lease; an orphaned one nobody looks at expires
   * `retentionMs + producerLeaseMs` after its last renewal.
   */
  retentionMs?: number;
  /**
   * The producer lease of a live turn, ms. The instance that created a turn renews it
   * every `producerLeaseMs / 3`; when it lapses (the instance died or lost Redis), the
   * next reader on any instance ends the turn `failed` with error code `producer_lost`.
   * Readers following a live turn check the lease as often as it is renewed. Default 15 000.
   */
  producerLeaseMs?: number;
  /** Clock for `createdAt`/`updatedAt`/`endedAt`, ms since the epoch. Default `Date.now`. Retention runs on Redis's clock. */
  now?: () => number;
  /**
   * Failures the log handled itself (lease renewal, the follower connection) and turns
   * it ended because their producer was lost. Pass the handler's `onError` to see both
   * in one place. Default `console.error`.
   */
  onError?: ServerErrorReporter;
}

/** 24 hours, the protocol's reference retention. */
const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;
const DEFAULT_PRODUCER_LEASE_MS = 15_000;
/**
 * An `in_flight` idempotency record only spans the few round trips between accepting a
 * submission and creating its turn; if the accepting instance dies there, the key
 * answers 409 for at most this long instead of for a whole retention period.
 */
const IN_FLIGHT_TTL_MS = 60_000;
/** Longest single blocking read; the follower loop re-issues it while anyone waits. */
const BLOCK_MS = 10_000;
const TURN_STATUSES: ReadonlySet<string> = new Set<ServerTurnStatus>(['pending', 'streaming', 'complete', 'failed', 'cancelled']);

/** A Lua script run with EVALSHA, falling back to EVAL when Redis does not know it yet. */
class Script {
  readonly source: string;
  readonly sha: string;
  constructor(source: string) {
    this.source = source;
    this.sha = createHash('sha1').update(source).digest('hex');
  }
}

// Every script touches only the keys it is given, so ioredis's own keyPrefix applies to them.

/** KEYS: turn, lease, tombstone, conversation index. ARGV: id, conversationId, messageId, principal, createdAt, createdAtMs, owner, leaseMs, turn ttl, tombstone ttl, index ttl. */
const CREATE = new Script(`
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'conversationId', ARGV[2], 'messageId', ARGV[3], 'principal', ARGV[4],
  'status', 'pending', 'lastSeq', '0', 'createdAt', ARGV[5], 'updatedAt', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[9])
redis.call('SET', KEYS[2], ARGV[7], 'PX', ARGV[8])
redis.call('SET', KEYS[3], '1', 'PX', ARGV[10])
-- Scores are creation times; a turn created in the same millisecond as the newest one (or
-- earlier, by another instance's clock) goes just after it, so the index keeps arrival order.
local score = tonumber(ARGV[6])
local newest = redis.call('ZREVRANGE', KEYS[4], 0, 0, 'WITHSCORES')
if newest[2] and tonumber(newest[2]) >= score then score = tonumber(newest[2]) + 1 / 1024 end
redis.call('ZADD', KEYS[4], string.format('%.17g', score), ARGV[1])
redis.call('PEXPIRE', KEYS[4], ARGV[11])
return 1
`);

/**
 * KEYS: turn, events, lease, cancel, tombstone. ARGV: now, key ttl, tombstone ttl,
 * expected lastSeq ('' = any), '1' when the lease must have lapsed, then per event:
 * its JSON body and its end status ('' unless turn.end).
 * Returns {seq[, principal, conversationId, idempotency key]} (the extra fields once the
 * turn ended), or {0} unknown turn, {-1} already ended, {-2} lastSeq moved, {-3} lease held.
 */
const APPEND = new Script(`
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
if redis.call('HEXISTS', KEYS[1], 'endedAt') == 1 then return {-1} end
local seq = tonumber(redis.call('HGET', KEYS[1], 'lastSeq'))
if ARGV[4] ~= '' and tonumber(ARGV[4]) ~= seq then return {-2} end
if ARGV[5] == '1' and redis.call('EXISTS', KEYS[3]) == 1 then return {-3} end
local ended = false
for i = 6, #ARGV, 2 do
  seq = seq + 1
  -- The entry id is the seq, so Redis itself refuses a second event with the same seq.
  redis.call('XADD', KEYS[2], string.format('%d-0', seq), 'e', ARGV[i])
  if ARGV[i + 1] ~= '' then
    redis.call('HSET', KEYS[1], 'status', ARGV[i + 1], 'endedAt', ARGV[1])
    ended = true
  end
end
if not ended then redis.call('HSET', KEYS[1], 'status', 'streaming') end
redis.call('HSET', KEYS[1], 'lastSeq', string.format('%d', seq), 'updatedAt', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[4], ARGV[2])
redis.call('PEXPIRE', KEYS[5], ARGV[3])
if ended then
  redis.call('DEL', KEYS[3])
  local info = redis.call('HMGET', KEYS[1], 'principal', 'conversationId', 'idem')
  return {seq, info[1], info[2], info[3] or ''}
end
return {seq}
`);

/**
 * KEYS: turn, events, lease, cancel, tombstone. ARGV: owner, leaseMs, key ttl, tombstone
 * ttl, '1' once the turn should have started. 1 = held, 0 = turn ended/gone, -1 = never started.
 */
const RENEW = new Script(`
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'endedAt') == 1 then return 0 end
if ARGV[5] == '1' and redis.call('HGET', KEYS[1], 'lastSeq') == '0' then return -1 end
local holder = redis.call('GET', KEYS[3])
if holder and holder ~= ARGV[1] then return 0 end
-- A lapsed lease of a turn nobody ended yet is simply taken back: the producer is alive.
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('PEXPIRE', KEYS[4], ARGV[3])
redis.call('PEXPIRE', KEYS[5], ARGV[4])
return 1
`);

/** KEYS: lease. ARGV: owner. */
const RELEASE = new Script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);

/** KEYS: idempotency key. ARGV: record, ttl. Returns the existing record or nil. */
const PUT_IF_ABSENT = new Script(`
local found = redis.call('GET', KEYS[1])
if found then return found end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
`);

/** KEYS: idempotency key, turn. ARGV: record, ttl, the idempotency key as the log names it. */
const COMPLETE = new Script(`
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
-- Remembered on the turn so whoever ends it can extend the key's life to the turn's.
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HSET', KEYS[2], 'idem', ARGV[3]) end
return 1
`);

type TurnHash = Record<string, string>;

/** What this instance knows about a turn it produces, to keep its keys alive. */
interface OwnedTurn {
  /** `Date.now()` when this instance created it. */
  claimedAt: number;
  conversationKey: string;
  idempotencyKey?: string;
}

function checkPositive(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new LifelineError('invalid_argument', `${name} must be a positive integer number of ms, got ${String(value)}.`);
  }
}

function toStoredTurn(hash: TurnHash): StoredTurn {
  const status = hash['status'] ?? '';
  if (!TURN_STATUSES.has(status)) throw new Error(`Turn ${hash['id'] ?? '?'} has a corrupt status ${JSON.stringify(status)} in Redis.`);
  const turn: StoredTurn = {
    id: hash['id'] ?? '',
    conversationId: hash['conversationId'] ?? '',
    messageId: hash['messageId'] ?? '',
    status: status as ServerTurnStatus,
    lastSeq: Number(hash['lastSeq'] ?? 0),
    createdAt: hash['createdAt'] ?? '',
    updatedAt: hash['updatedAt'] ?? '',
    principal: hash['principal'] ?? '',
  };
  if (hash['endedAt'] !== undefined) turn.endedAt = hash['endedAt'];
  return turn;
}

function isLive(hash: TurnHash): boolean {
  return hash['endedAt'] === undefined;
}

/** A stream entry `[id, ['e', body]]` back into the event it logged. */
function toEvent(turnId: string, [id, fields]: [string, string[]]): TurnEvent {
  const seq = Number.parseInt(id, 10);
  const body = fields[1];
  if (fields[0] !== 'e' || body === undefined) throw new Error(`Turn ${turnId} has a corrupt event ${id} in Redis.`);
  return { turnId, seq, ...(JSON.parse(body) as object) } as TurnEvent;
}

/** Runs a MULTI and returns its replies, throwing the first command error. */
async function execAll(multi: ChainableCommander): Promise<unknown[]> {
  const replies = await multi.exec();
  if (replies === null) throw new Error('A Redis transaction was aborted.');
  return replies.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  });
}

class RedisTurnLog implements TurnLog {
  readonly #client: Promise<Redis>;
  readonly #ownsClient: boolean;
  readonly #prefix: string;
  readonly #retentionMs: number;
  /**
   * TTL of a live turn's keys, refreshed by every append and lease renewal: longer than
   * a renewal period, so a turn never expires while it is produced, however silent.
   */
  readonly #liveTtlMs: number;
  /** TTL of the conversation index, refreshed at every write: outlives its turns' tombstones. */
  readonly #indexTtlMs: number;
  readonly #leaseMs: number;
  readonly #now: () => number;
  readonly #report: ServerErrorReporter;
  /** This instance's lease holder name. */
  readonly #owner = randomUUID();
  readonly #owned = new Map<string, OwnedTurn>();
  #renewTimer: ReturnType<typeof setInterval> | undefined;
  #renewing = false;
  #waiter: StreamWaiter | undefined;
  #closed = false;

  constructor(options: RedisTurnLogOptions) {
    if ((options.client === undefined) === (options.url === undefined)) {
      throw new LifelineError('invalid_argument', 'createRedisTurnLog needs exactly one of `client` and `url`.');
    }
    this.#retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    this.#leaseMs = options.producerLeaseMs ?? DEFAULT_PRODUCER_LEASE_MS;
    checkPositive('retentionMs', this.#retentionMs);
    checkPositive('producerLeaseMs', this.#leaseMs);
    this.#liveTtlMs = this.#retentionMs + this.#leaseMs;
    this.#indexTtlMs = 2 * this.#retentionMs + this.#leaseMs;
    this.#prefix = options.keyPrefix ?? 'lifeline:';
    this.#now = options.now ?? Date.now;
    this.#report =
      options.onError ??
      ((error, context) => console.error(`[lifeline] redis turn log${context.turnId ? `, turn ${context.turnId}` : ''}:`, error));
    this.#ownsClient = options.client === undefined;
    if (options.client !== undefined) {
      const mapping = (options.client.options as { replyMapping?: string }).replyMapping;
      if (mapping !== undefined && mapping !== 'legacy') {
        throw new LifelineError('invalid_argument', `createRedisTurnLog needs a client with replyMapping 'legacy', got '${mapping}'.`);
      }
      this.#client = Promise.resolve(options.client);
    } else {
      const url = options.url as string;
      // Loaded only here, so `lifeline/server` never needs ioredis installed.
      this.#client = import('ioredis').then(({ Redis }) => {
        const client = new Redis(url);
        client.on('error', (error: unknown) => this.#report(error, { phase: 'store' }));
        return client;
      });
      // Surfaced by the first command; without this a missing ioredis would crash the process.
      this.#client.catch(() => undefined);
    }
  }

  // ------------------------------------------------------------------ keys
  // A turn's keys share the hash tag {turnId}: one slot, should Cluster support come.

  #turnKeys(turnId: string): [turn: string, events: string, lease: string, cancel: string, tombstone: string] {
    const base = `${this.#prefix}turn:{${turnId}}`;
    return [base, `${base}:events`, `${base}:lease`, `${base}:cancel`, `${base}:gone`];
  }

  #conversationKey(principal: string, conversationId: string): string {
    // Principals are arbitrary strings: encoded, a ':' or '{' in one cannot forge another's key.
    return `${this.#prefix}conv:${encodeURIComponent(principal)}:${conversationId}`;
  }

  #idempotencyKey(principal: string, key: string): string {
    return `${this.#prefix}idem:${encodeURIComponent(principal)}:${key}`;
  }

  // ------------------------------------------------------------------ plumbing

  async #redis(): Promise<Redis> {
    if (this.#closed) throw new Error('The Redis turn log is closed.');
    try {
      return await this.#client;
    } catch (cause) {
      throw new LifelineError('invalid_argument', 'createRedisTurnLog({ url }) needs the optional peer dependency ioredis: npm install ioredis.', {
        cause,
      });
    }
  }

  async #run(script: Script, keys: string[], args: (string | number)[]): Promise<unknown> {
    const client = await this.#redis();
    try {
      return await client.evalsha(script.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return client.eval(script.source, keys.length, ...keys, ...args);
    }
  }

  #isoNow(): string {
    return new Date(this.#now()).toISOString();
  }

  /**
   * Appends `bodies` in one atomic step. Returns the new lastSeq, or the reason it did
   * not append. At `turn.end` it also extends the conversation index and idempotency key.
   */
  async #appendBodies(
    turnId: string,
    bodies: { body: string; endStatus: string }[],
    condition: { expectSeq?: number; leaseLapsed?: boolean } = {},
  ): Promise<number | 'unknown' | 'ended' | 'moved' | 'held'> {
    const ends = bodies.some(({ endStatus }) => endStatus !== '');
    // Retention counts from turn.end; until then the live TTL keeps the turn whatever its pace.
    const ttl = ends ? this.#retentionMs : this.#liveTtlMs;
    const args: (string | number)[] = [
      this.#isoNow(),
      ttl,
      ttl + this.#retentionMs,
      condition.expectSeq === undefined ? '' : condition.expectSeq,
      condition.leaseLapsed ? '1' : '0',
    ];
    for (const { body, endStatus } of bodies) args.push(body, endStatus);
    const reply = (await this.#run(APPEND, this.#turnKeys(turnId), args)) as [number, string?, string?, string?];
    const [seq, principal, conversationId, idempotencyKey] = reply;
    if (seq === 0) return 'unknown';
    if (seq === -1) return 'ended';
    if (seq === -2) return 'moved';
    if (seq === -3) return 'held';
    if (principal !== undefined && conversationId !== undefined) {
      this.#owned.delete(turnId);
      const client = await this.#redis();
      const multi = client.multi().pexpire(this.#conversationKey(principal, conversationId), this.#indexTtlMs);
      if (idempotencyKey) multi.pexpire(idempotencyKey, this.#retentionMs);
      await execAll(multi);
    }
    return seq;
  }

  /**
   * Ends a live turn whose producer lease lapsed: `turn.end` `failed`, error
   * `producer_lost`, with the length and hash of the text logged so far (and a
   * `turn.start` first if the producer died before writing one). Atomic and once:
   * it only appends when the log still ends at the seq it hashed and the lease is
   * still lapsed, so two instances noticing at once cannot both end it, and a
   * producer that was only slow (and renewed or appended since) keeps its turn.
   */
  async #endIfProducerLost(turnId: string): Promise<void> {
    const [turnKey, eventsKey] = this.#turnKeys(turnId);
    const client = await this.#redis();
    const [hash, entries] = (await execAll(client.multi().hgetall(turnKey).xrange(eventsKey, '-', '+'))) as [
      TurnHash,
      [string, string[]][],
    ];
    if (hash['status'] === undefined || !isLive(hash)) return;
    const lastSeq = Number(hash['lastSeq']);
    let text = '';
    for (const entry of entries) {
      const event = toEvent(turnId, entry);
      if (event.type === 'delta') text += event.text;
    }
    const bodies: { body: string; endStatus: string }[] = [];
    if (lastSeq === 0) {
      const start: NewTurnEvent = {
        type: 'turn.start',
        messageId: hash['messageId'] ?? '',
        conversationId: hash['conversationId'] ?? '',
        createdAt: hash['createdAt'] ?? '',
      };
      bodies.push({ body: JSON.stringify(start), endStatus: '' });
    }
    const end: NewTurnEvent = {
      type: 'turn.end',
      status: 'failed',
      error: { code: 'producer_lost', message: 'The server instance producing this turn stopped; the turn cannot continue.' },
      textLength: text.length,
      textSha256: await sha256Hex(text),
    };
    bodies.push({ body: JSON.stringify(end), endStatus: 'failed' });
    const result = await this.#appendBodies(turnId, bodies, { expectSeq: lastSeq, leaseLapsed: true });
    if (typeof result === 'number') {
      this.#report(new Error(`The producer of turn ${turnId} let its lease lapse; the turn was ended failed/producer_lost at seq ${result}.`), {
        phase: 'store',
        turnId,
      });
    }
  }

  #startRenewing(): void {
    if (this.#renewTimer !== undefined) return;
    this.#renewTimer = setInterval(() => void this.#renew(), Math.max(1, Math.floor(this.#leaseMs / 3)));
    (this.#renewTimer as { unref?: () => void }).unref?.();
  }

  async #renew(): Promise<void> {
    if (this.#renewing || this.#closed) return;
    this.#renewing = true;
    try {
      await Promise.all(
        [...this.#owned].map(async ([turnId, owned]) => {
          try {
            const held = await this.#run(RENEW, this.#turnKeys(turnId), [
              this.#owner,
              this.#leaseMs,
              this.#liveTtlMs,
              this.#liveTtlMs + this.#retentionMs,
              // A producer logs turn.start first thing; a turn without one after a whole
              // lease was created but never started here (its request failed half-way).
              Date.now() - owned.claimedAt > this.#leaseMs ? '1' : '0',
            ]);
            if (held === -1) {
              this.#report(new Error(`Turn ${turnId} was created but never started; its lease is left to lapse (it will end producer_lost).`), {
                phase: 'store',
                turnId,
              });
            }
            if (held !== 1) {
              this.#owned.delete(turnId);
              return;
            }
            const client = await this.#redis();
            const multi = client.multi().pexpire(owned.conversationKey, this.#indexTtlMs);
            if (owned.idempotencyKey !== undefined) multi.pexpire(owned.idempotencyKey, this.#liveTtlMs);
            await execAll(multi);
          } catch (error) {
            this.#report(error, { phase: 'store', turnId });
          }
        }),
      );
    } finally {
      this.#renewing = false;
      if (this.#owned.size === 0 && this.#renewTimer !== undefined) {
        clearInterval(this.#renewTimer);
        this.#renewTimer = undefined;
      }
    }
  }

  async #streamWaiter(): Promise<StreamWaiter> {
    if (this.#waiter === undefined) {
      const client = await this.#redis();
      this.#waiter ??= createStreamWaiter({
        client,
        wakeKey: `${this.#prefix}wake:${this.#owner}`,
        blockMs: BLOCK_MS,
        onError: (error) => this.#report(error, { phase: 'store' }),
      });
    }
    return this.#waiter;
  }

  // ------------------------------------------------------------------ TurnLog

  async createTurn(init: Parameters<TurnLog['createTurn']>[0]): Promise<StoredTurn> {
    const [turnKey, , leaseKey, , tombstoneKey] = this.#turnKeys(init.id);
    const conversationKey = this.#conversationKey(init.principal, init.conversationId);
    const created = await this.#run(
      CREATE,
      [turnKey, leaseKey, tombstoneKey, conversationKey],
      [
        init.id,
        init.conversationId,
        init.messageId,
        init.principal,
        init.createdAt,
        Number.isFinite(Date.parse(init.createdAt)) ? Date.parse(init.createdAt) : this.#now(),
        this.#owner,
        this.#leaseMs,
        this.#liveTtlMs,
        this.#liveTtlMs + this.#retentionMs,
        this.#indexTtlMs,
      ],
    );
    if (created !== 1) throw new Error(`Turn ${init.id} already exists.`);
    this.#owned.set(init.id, { claimedAt: Date.now(), conversationKey });
    this.#startRenewing();
    return pendingTurn(init);
  }

  async getTurn(turnId: string): Promise<StoredTurn | 'expired' | undefined> {
    const [turnKey, , leaseKey, , tombstoneKey] = this.#turnKeys(turnId);
    const client = await this.#redis();
    const read = async (): Promise<[TurnHash, number, number]> =>
      (await execAll(client.multi().hgetall(turnKey).exists(leaseKey).exists(tombstoneKey))) as [TurnHash, number, number];
    let [hash, leased, tombstone] = await read();
    if (hash['status'] === undefined) return tombstone === 1 ? 'expired' : undefined;
    if (isLive(hash) && leased === 0) {
      await this.#endIfProducerLost(turnId);
      [hash, leased, tombstone] = await read();
      if (hash['status'] === undefined) return tombstone === 1 ? 'expired' : undefined;
    }
    return toStoredTurn(hash);
  }

  async append(turnId: string, event: NewTurnEvent): Promise<TurnEvent> {
    const body = JSON.stringify(event);
    const result = await this.#appendBodies(turnId, [{ body, endStatus: event.type === 'turn.end' ? event.status : '' }]);
    if (result === 'unknown') throw new Error(`Turn ${turnId} is unknown or expired.`);
    if (typeof result !== 'number') throw new Error(`Turn ${turnId} has ended; its log is closed.`);
    // Parsed back from what was stored, so the caller gets exactly what readers will get.
    return { turnId, seq: result, ...(JSON.parse(body) as object) } as TurnEvent;
  }

  async read(turnId: string, after: number, limit: number): Promise<EventPage> {
    const [, eventsKey] = this.#turnKeys(turnId);
    const client = await this.#redis();
    // `${n}` as a range start means the id n-0, the entry of seq n.
    const entries = await client.xrange(eventsKey, `${Math.max(0, after) + 1}`, '+', 'COUNT', limit + 1);
    const hasMore = entries.length > limit;
    const events = (hasMore ? entries.slice(0, limit) : entries).map((entry) => toEvent(turnId, entry));
    return { events, hasMore };
  }

  async waitForEvents(turnId: string, after: number, options: { signal: AbortSignal; timeoutMs: number }): Promise<void> {
    const { signal, timeoutMs } = options;
    const [turnKey, eventsKey, leaseKey] = this.#turnKeys(turnId);
    const deadline = Date.now() + timeoutMs;
    const checkEveryMs = Math.max(1, Math.floor(this.#leaseMs / 3));
    while (!signal.aborted && !this.#closed) {
      const client = await this.#redis();
      const [[lastSeq, endedAt], leased] = (await execAll(client.multi().hmget(turnKey, 'lastSeq', 'endedAt').exists(leaseKey))) as [
        [string | null, string | null],
        number,
      ];
      if (lastSeq === null || endedAt !== null || Number(lastSeq) > after) return;
      if (leased === 0) {
        // Ends the turn (the caller then reads turn.end) or finds the producer alive again.
        await this.#endIfProducerLost(turnId);
        return;
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) return;
      const waiter = await this.#streamWaiter();
      if (await waiter.wait(eventsKey, after, signal, Math.min(remaining, checkEveryMs))) return;
    }
  }

  async listTurns(conversationId: string, principal: string, limit: number): Promise<StoredTurn[]> {
    const key = this.#conversationKey(principal, conversationId);
    const client = await this.#redis();
    const found: StoredTurn[] = [];
    const expired: string[] = [];
    let offset = 0;
    while (found.length < limit) {
      const ids = await client.zrevrange(key, offset, offset + limit - found.length - 1);
      if (ids.length === 0) break;
      offset += ids.length;
      const multi = client.multi();
      for (const id of ids) {
        const [turnKey, , leaseKey] = this.#turnKeys(id);
        multi.hgetall(turnKey).exists(leaseKey);
      }
      const replies = await execAll(multi);
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i] as string;
        const hash = replies[2 * i] as TurnHash;
        if (hash['status'] === undefined) {
          expired.push(id);
          continue;
        }
        let turn: StoredTurn | 'expired' | undefined = toStoredTurn(hash);
        // getTurn ends it first if its producer was lost, so the list never shows a dead turn as live.
        if (isLive(hash) && replies[2 * i + 1] === 0) turn = await this.getTurn(id);
        if (typeof turn === 'object' && turn.principal === principal) found.push(turn);
      }
    }
    // Retention removed these turns' records; their index entries go too.
    if (expired.length > 0) await client.zrem(key, ...expired);
    return found;
  }

  async getIdempotency(principal: string, key: string): Promise<IdempotencyRecord | undefined> {
    const client = await this.#redis();
    const found = await client.get(this.#idempotencyKey(principal, key));
    return found === null ? undefined : (JSON.parse(found) as IdempotencyRecord);
  }

  async putIdempotencyIfAbsent(principal: string, key: string, record: IdempotencyRecord): Promise<IdempotencyRecord | undefined> {
    const ttl = record.state === 'in_flight' ? IN_FLIGHT_TTL_MS : this.#liveTtlMs;
    const found = await this.#run(PUT_IF_ABSENT, [this.#idempotencyKey(principal, key)], [JSON.stringify(record), ttl]);
    return typeof found === 'string' ? (JSON.parse(found) as IdempotencyRecord) : undefined;
  }

  async completeIdempotency(principal: string, key: string, record: IdempotencyRecord): Promise<void> {
    const idempotencyKey = this.#idempotencyKey(principal, key);
    const turnKey = this.#turnKeys(record.turnId ?? '')[0];
    // The turn is live now; whoever ends it shortens the key's life to the retention period.
    await this.#run(COMPLETE, [idempotencyKey, turnKey], [JSON.stringify(record), this.#liveTtlMs, idempotencyKey]);
    const owned = record.turnId === undefined ? undefined : this.#owned.get(record.turnId);
    if (owned) owned.idempotencyKey = idempotencyKey;
  }

  async deleteIdempotency(principal: string, key: string): Promise<void> {
    const client = await this.#redis();
    await client.del(this.#idempotencyKey(principal, key));
  }

  async requestCancel(turnId: string): Promise<void> {
    const client = await this.#redis();
    await client.set(this.#turnKeys(turnId)[3], '1', 'PX', this.#liveTtlMs);
  }

  async isCancelRequested(turnId: string): Promise<boolean> {
    const client = await this.#redis();
    return (await client.exists(this.#turnKeys(turnId)[3])) === 1;
  }

  /**
   * Stops renewing leases and gives up the ones still held, so another instance ends
   * those turns (`producer_lost`) on its next look instead of after the lease time;
   * closes the follower connection, and the client when the log opened it.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#renewTimer !== undefined) clearInterval(this.#renewTimer);
    this.#renewTimer = undefined;
    const owned = [...this.#owned.keys()];
    this.#owned.clear();
    await Promise.all(
      owned.map((turnId) =>
        this.#run(RELEASE, [this.#turnKeys(turnId)[2]], [this.#owner]).catch((error: unknown) => this.#report(error, { phase: 'store', turnId })),
      ),
    );
    this.#closed = true;
    await this.#waiter?.close();
    if (this.#ownsClient) {
      const client = await this.#client.catch(() => undefined);
      if (client) await client.quit().catch(() => client.disconnect());
    }
  }
}

/**
 * A {@link TurnLog} in Redis, shared by every server instance that points at the same
 * Redis: a client that reconnects through a load balancer to another instance resumes
 * and replays the same turn there. No sticky sessions needed.
 *
 * Layout (prefix `lifeline:` by default): per turn a hash `turn:{id}` (the record), a
 * stream `turn:{id}:events` whose entry ids are `<seq>-0`, a producer lease
 * `turn:{id}:lease`, a cancel flag `turn:{id}:cancel` and a tombstone `turn:{id}:gone`;
 * per principal and conversation a sorted set `conv:<principal>:<conversationId>`; per
 * idempotency key a string `idem:<principal>:<key>`. Every key expires: an ended turn's
 * keys `retentionMs` after `turn.end`, its tombstone one retention period later; a live
 * turn's keys are kept alive by every append and lease renewal.
 *
 * Needs Redis ≥ 5 (standalone or Sentinel; tested on 7.0) and the optional peer dependency `ioredis`.
 *
 * @example
 * import { createLifelineHandler } from 'lifeline/server';
 * import { createRedisTurnLog } from 'lifeline/server/redis';
 *
 * const store = createRedisTurnLog({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
 * const handler = createLifelineHandler({ store, agent });
 */
export function createRedisTurnLog(options: RedisTurnLogOptions): TurnLog {
  return new RedisTurnLog(options);
}
