/**
 * The simulated protocol server (docs/protocol.md 1.2): submit with idempotency (section 1),
 * the event log each turn's producer appends to on virtual time (section 2), replay pages
 * (section 3), the conversation list (section 4) and cancel (section 5). It is the oracle
 * too: every invariant compares the clients against its log. HTTP framing and faults live
 * in network.ts; this file only knows turns.
 */
import { createHash } from 'node:crypto';
import type { Rng } from './rng.js';
import type { Scheduler } from './scheduler.js';

/** One logged event as the wire carries it (an unknown type included: forward compatibility, section 2). */
export type LoggedEvent = { turnId: string; seq: number; type: string; [field: string]: unknown };

export interface SimTurn {
  id: string;
  conversationId: string;
  messageId: string;
  content: unknown;
  operationId: string;
  status: 'pending' | 'streaming' | 'complete' | 'failed' | 'cancelled';
  createdAt: string;
  updatedAt: string;
  log: LoggedEvent[];
  /** Deltas still to produce (the producer's plan). */
  plan: string[];
  /** Paused producers add nothing until resumed (a slow agent; heartbeats go on). */
  paused: boolean;
  watchers: Set<() => void>;
}

export interface ServerOptions {
  /** Logs an event of a type no client knows between deltas, with this chance each (W4). */
  unknownEventChance: number;
}

export interface SimServer {
  readonly turns: ReadonlyMap<string, SimTurn>;
  /** Operation id → turn id, one per key ever accepted. */
  readonly keys: ReadonlyMap<string, string>;
  options: ServerOptions;
  submit(conversationId: string, key: string, body: string): { status: number; body: unknown; replayed?: boolean };
  /** The events after `after` now, and whether the turn has ended. */
  read(turnId: string, after: number): { events: LoggedEvent[]; ended: boolean } | undefined;
  /** Calls `onChange` when the turn logs something; returns unsubscribe. */
  watch(turnId: string, onChange: () => void): () => void;
  replay(turnId: string, after: number, limit: number): { status: number; body: unknown };
  list(conversationId: string, limit: number): { status: number; body: unknown };
  cancel(turnId: string): { status: number; body: unknown };
  /** Every live turn produces to its end from now on, unpaused (the heal phase). */
  finishAll(): void;
  isEnded(turn: SimTurn): boolean;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const error = (status: number, code: string): { status: number; body: unknown } => ({ status, body: { error: { code, message: code } } });

export function createSimServer(rng: Rng, scheduler: Scheduler, options: ServerOptions): SimServer {
  const turns = new Map<string, SimTurn>();
  const keys = new Map<string, string>();
  const fingerprints = new Map<string, string>();
  const conversations = new Map<string, string[]>();
  const iso = (): string => new Date(scheduler.wall()).toISOString();
  const isEnded = (turn: SimTurn): boolean => turn.log.at(-1)?.type === 'turn.end';

  const object = (turn: SimTurn): Record<string, unknown> => ({
    id: turn.id,
    conversationId: turn.conversationId,
    messageId: turn.messageId,
    status: turn.status,
    lastSeq: turn.log.length,
    createdAt: turn.createdAt,
    updatedAt: turn.updatedAt,
    content: turn.content,
  });

  const append = (turn: SimTurn, event: Record<string, unknown> & { type: string }): void => {
    turn.log.push({ turnId: turn.id, seq: turn.log.length + 1, ...event });
    turn.updatedAt = iso();
    if (event.type === 'turn.start') turn.status = 'streaming';
    for (const watcher of [...turn.watchers]) watcher();
  };

  const end = (turn: SimTurn, status: 'complete' | 'failed' | 'cancelled'): void => {
    if (isEnded(turn)) return;
    const text = turn.log.filter((e) => e.type === 'delta').map((e) => e['text'] as string).join('');
    turn.status = status;
    turn.plan = [];
    append(turn, { type: 'turn.end', status, textLength: text.length, textSha256: sha256(text), ...(status === 'failed' && { error: { code: 'agent_failed' } }) });
  };

  /** The producer: one event per tick, on virtual time, until the plan is done. */
  const produce = (turn: SimTurn, fast = false): void => {
    scheduler.task(() => {
      if (isEnded(turn)) return;
      if (turn.paused) return produce(turn, fast);
      if (turn.log.length === 0) append(turn, { type: 'turn.start', messageId: turn.messageId, conversationId: turn.conversationId, createdAt: turn.createdAt });
      else if (rng.chance(options.unknownEventChance)) append(turn, { type: 'x-sim-future', note: 'a type from a later protocol' });
      else if (turn.plan.length) append(turn, { type: 'delta', text: turn.plan.shift()! });
      else return end(turn, rng.chance(0.9) ? 'complete' : 'failed');
      produce(turn, fast);
    }, fast ? rng.int(5, 50) : rng.int(20, 600));
  };

  const server: SimServer = {
    turns,
    keys,
    options,
    isEnded,
    submit(conversationId, key, body) {
      if (!/^[A-Za-z0-9_-]{16,128}$/.test(key)) return error(400, 'invalid_idempotency_key');
      let content: unknown;
      try {
        content = (JSON.parse(body) as { content: unknown }).content;
      } catch {
        return error(400, 'invalid_json');
      }
      const fingerprint = conversationId + '\n' + body;
      const known = keys.get(key);
      if (known) {
        if (fingerprints.get(key) !== fingerprint) return error(422, 'idempotency_key_reused');
        const turn = turns.get(known)!;
        return { status: 200, replayed: true, body: { turnId: turn.id, messageId: turn.messageId, conversationId, status: 'pending' } };
      }
      const createdAt = iso();
      const turn: SimTurn = {
        id: 't' + rng.id(20),
        conversationId,
        messageId: 'm' + rng.id(12),
        content,
        operationId: key,
        status: 'pending',
        createdAt,
        updatedAt: createdAt,
        log: [],
        plan: Array.from({ length: rng.int(1, 12) }, () => rng.pick(['Hel', 'lo', ' wor', 'ld', '. ', 'é', '日本', '', '🙂', ' ok'])),
        paused: false,
        watchers: new Set(),
      };
      turns.set(turn.id, turn);
      keys.set(key, turn.id);
      fingerprints.set(key, fingerprint);
      conversations.set(conversationId, [...(conversations.get(conversationId) ?? []), turn.id]);
      produce(turn);
      return { status: 202, body: { turnId: turn.id, messageId: turn.messageId, conversationId, status: 'pending' } };
    },
    read(turnId, after) {
      const turn = turns.get(turnId);
      return turn && { events: turn.log.slice(after), ended: isEnded(turn) };
    },
    watch(turnId, onChange) {
      const turn = turns.get(turnId);
      turn?.watchers.add(onChange);
      return () => turn?.watchers.delete(onChange);
    },
    replay(turnId, after, limit) {
      const turn = turns.get(turnId);
      if (!turn) return error(404, 'turn_not_found');
      if (after > turn.log.length) return error(400, 'resume_point_ahead');
      const events = turn.log.slice(after, after + limit);
      return { status: 200, body: { turn: object(turn), events, hasMore: after + events.length < turn.log.length } };
    },
    list(conversationId, limit) {
      const ids = [...(conversations.get(conversationId) ?? [])].reverse().slice(0, limit);
      return { status: 200, body: { turns: ids.map((id) => object(turns.get(id)!)) } };
    },
    cancel(turnId) {
      const turn = turns.get(turnId);
      if (!turn) return error(404, 'turn_not_found');
      if (isEnded(turn)) return { status: 200, body: { turn: object(turn) } };
      if (turn.log.length === 0) append(turn, { type: 'turn.start', messageId: turn.messageId, conversationId: turn.conversationId, createdAt: turn.createdAt });
      end(turn, 'cancelled');
      return { status: 202, body: { turn: object(turn) } };
    },
    finishAll() {
      for (const turn of turns.values()) {
        turn.paused = false;
        if (!isEnded(turn)) produce(turn, true);
      }
    },
  };
  return server;
}
