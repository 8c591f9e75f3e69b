/**
 * Names of every key the Redis turn log writes. A turn's keys all carry the hash tag
 * `{turnId}`, so on Redis Cluster they live in one slot and one script or MULTI may
 * touch them together; nothing else is ever written in the same step (see
 * docs/reliability.md, "Redis Cluster").
 */
export interface TurnKeys {
  /** Hash: the turn's record. */
  turn: string;
  /** Stream: the events, entry id `<seq>-0`. */
  events: string;
  /** String: the producing instance's lease. */
  lease: string;
  /** String: set once cancel was requested. */
  cancel: string;
  /** String: the tombstone, kept one retention period longer; its value is the principal. */
  gone: string;
  /** Sharded pub/sub channel announcing each appended seq (cluster only). */
  wake: string;
}

export interface KeyNames {
  turn(turnId: string): TurnKeys;
  /** Sorted set of a principal's turns in one conversation. Slot of its own. */
  conversation(principal: string, conversationId: string): string;
  /** String: an idempotency record. Slot of its own. */
  idempotency(principal: string, key: string): string;
  /** The control stream of one instance's blocking follower connection (standalone Redis only). */
  wakeStream(owner: string): string;
  /** Prefix of the operator index's sorted sets (section 11), each its own slot. */
  operator: string;
}

export function keyNames(prefix: string): KeyNames {
  return {
    turn(turnId) {
      // However the prefix or id are spelled, every key below starts with this whole
      // string, which holds the first `{…}` of each: the same tag, so the same slot.
      const base = `${prefix}turn:{${turnId}}`;
      return {
        turn: base,
        events: `${base}:events`,
        lease: `${base}:lease`,
        cancel: `${base}:cancel`,
        gone: `${base}:gone`,
        wake: `${base}:wake`,
      };
    },
    // Principals are arbitrary strings: encoded, a ':' or '{' in one cannot forge another's key.
    conversation: (principal, conversationId) => `${prefix}conv:${encodeURIComponent(principal)}:${conversationId}`,
    idempotency: (principal, key) => `${prefix}idem:${encodeURIComponent(principal)}:${key}`,
    wakeStream: (owner) => `${prefix}wake:${owner}`,
    operator: `${prefix}op:`,
  };
}
