import type { ChainableCommander } from 'ioredis';
import type { JsonObject, MessageContent, ServerTurnStatus, TurnEvent } from '../../../protocol/schemas.js';
import type { StoredTurn } from '../turn-log.js';

/** A turn's record hash as HGETALL returns it. */
export type TurnHash = Record<string, string>;

const TURN_STATUSES: ReadonlySet<string> = new Set<ServerTurnStatus>(['pending', 'streaming', 'complete', 'failed', 'cancelled']);

/** The record hash back into the turn; throws on a record this log did not write. */
export function toStoredTurn(hash: TurnHash): StoredTurn {
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
    // A record written before 1.1 kept no content.
    content: hash['content'] === undefined ? '' : (JSON.parse(hash['content']) as MessageContent),
  };
  if (hash['endedAt'] !== undefined) turn.endedAt = hash['endedAt'];
  const delivery = hash['delivery'];
  turn.delivery = delivery === 'delivered' || delivery === 'mismatch' ? { state: delivery, ...(hash['deliveryAt'] === undefined ? {} : { at: hash['deliveryAt'] }) } : { state: 'pending' };
  if (hash['context'] !== undefined) turn.context = JSON.parse(hash['context']) as JsonObject;
  if (hash['continues'] !== undefined) turn.continues = hash['continues'];
  return turn;
}

/**
 * What the newest stream entry says of its turn. The last entry of each append carries
 * the append's id (`a`), its time (`t`) and, on `turn.end`, the end status (`s`):
 * fields `e <body> a <id> t <time> [s <status>]`. So a live turn's lastSeq and updatedAt
 * are read off its stream, and an append need not rewrite the record each time.
 */
export interface Head {
  seq: number;
  at: string;
  endStatus?: string;
}

/** The head an `XREVRANGE … COUNT 1` answered; none for an empty stream or an entry written before heads were kept. */
export function headOf(entries: readonly [string, string[]][]): Head | undefined {
  const [id, fields] = entries[0] ?? [];
  if (id === undefined || fields?.[4] !== 't' || fields[5] === undefined) return undefined;
  const head: Head = { seq: Number.parseInt(id, 10), at: fields[5] };
  if (fields[6] === 's' && fields[7] !== undefined) head.endStatus = fields[7];
  return head;
}

/**
 * The record as of its stream's `head`. The record says lastSeq and updatedAt only as of
 * the first append and the end; in between the head is newer. The head also wins when it
 * was read after the record and shows an end the record did not have yet, so the record
 * and the stream may be read in two commands (record first) without a transaction.
 */
export function current(hash: TurnHash, head: Head | undefined): TurnHash {
  if (hash['status'] === undefined || head === undefined || !isLive(hash) || head.seq < Number(hash['lastSeq'] ?? 0)) return hash;
  const turn: TurnHash = { ...hash, lastSeq: String(head.seq), updatedAt: head.at };
  if (head.endStatus !== undefined) {
    turn['status'] = head.endStatus;
    turn['endedAt'] = head.at;
  } else if (head.seq > 0) turn['status'] = 'streaming';
  return turn;
}

/** True while the turn has no `turn.end`. */
export function isLive(hash: TurnHash): boolean {
  return hash['endedAt'] === undefined;
}

/** A stream entry `[id, ['e', body]]` back into the event it logged. */
export function toEvent(turnId: string, [id, fields]: [string, string[]]): TurnEvent {
  const seq = Number.parseInt(id, 10);
  const body = fields[1];
  if (fields[0] !== 'e' || body === undefined) throw new Error(`Turn ${turnId} has a corrupt event ${id} in Redis.`);
  return { turnId, seq, ...(JSON.parse(body) as object) } as TurnEvent;
}

/** True for a value JSON gives back exactly as it was: a string, a boolean, null, a finite number other than -0. */
function survivesJson(value: unknown): boolean {
  const type = typeof value;
  if (type === 'string' || type === 'boolean' || value === null) return true;
  return type === 'number' && Number.isFinite(value) && !Object.is(value, -0);
}

/**
 * The event as a reader of `body` (its JSON) will get it, seq `seq`: `toEvent` of the
 * entry. An event of plain fields only (a delta's text, most of what a turn logs) is
 * copied as it is, since parsing its JSON back would give the same object; anything else
 * (nested objects, undefined, a prototype of its own) is parsed back from `body`.
 */
export function loggedEvent(turnId: string, seq: number, event: object, body: string): TurnEvent {
  if (Object.getPrototypeOf(event) === Object.prototype) {
    const copy: Record<string, unknown> = { turnId, seq };
    let plain = true;
    for (const key of Object.keys(event)) {
      const value = (event as Record<string, unknown>)[key];
      // An own `__proto__` would set the copy's prototype here, not a field as JSON.parse does.
      if (key === '__proto__' || !survivesJson(value)) {
        plain = false;
        break;
      }
      copy[key] = value;
    }
    if (plain) return copy as unknown as TurnEvent;
  }
  return { turnId, seq, ...(JSON.parse(body) as object) } as TurnEvent;
}

/** Runs a MULTI or pipeline (all of its keys in one slot) and returns its replies, throwing the first command error. */
export async function execAll(multi: ChainableCommander): Promise<unknown[]> {
  const replies = await multi.exec();
  if (replies === null) throw new Error('A Redis transaction was aborted.');
  return replies.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  });
}
