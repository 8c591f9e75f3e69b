import { createHash } from 'node:crypto';

/**
 * The Lua scripts of the Redis turn log. Each touches only the keys it is given (so
 * ioredis's own keyPrefix applies to them), and all of its keys share one hash slot:
 * a turn's keys, or one conversation index, or one idempotency record. On Redis
 * Cluster that is what makes each script atomic; see docs/reliability.md.
 */
export class Script {
  readonly source: string;
  readonly sha: string;
  constructor(source: string) {
    this.source = source;
    this.sha = createHash('sha1').update(source).digest('hex');
  }
}

/**
 * KEYS: turn, lease, tombstone. ARGV: id, conversationId, messageId, principal,
 * createdAt, content (JSON), owner, leaseMs, turn ttl, tombstone ttl, context (JSON, ''
 * for none), continues ('' for none). 1 = created, 0 = the id is taken.
 */
export const CREATE = new Script(`
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'conversationId', ARGV[2], 'messageId', ARGV[3], 'principal', ARGV[4],
  'status', 'pending', 'lastSeq', '0', 'createdAt', ARGV[5], 'updatedAt', ARGV[5], 'content', ARGV[6])
if ARGV[11] ~= '' then redis.call('HSET', KEYS[1], 'context', ARGV[11]) end
if ARGV[12] ~= '' then redis.call('HSET', KEYS[1], 'continues', ARGV[12]) end
redis.call('PEXPIRE', KEYS[1], ARGV[9])
redis.call('SET', KEYS[2], ARGV[7], 'PX', ARGV[8])
-- The tombstone names the principal, so an expired turn answers 410 only to its owner.
redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[10])
return 1
`);

/** KEYS: conversation index. ARGV: turn id, createdAt ms, ttl. */
export const INDEX = new Script(`
-- Scores are creation times; a turn created in the same millisecond as the newest one (or
-- earlier, by another instance's clock) goes just after it, so the index keeps arrival order.
local score = tonumber(ARGV[2])
local newest = redis.call('ZREVRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if newest[2] and tonumber(newest[2]) >= score then score = tonumber(newest[2]) + 1 / 1024 end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false then
  redis.call('ZADD', KEYS[1], string.format('%.17g', score), ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`);

/**
 * KEYS: turn, events, lease, cancel, tombstone, and on a cluster the wake channel.
 * ARGV: now, end ttl, tombstone end ttl, live ttl, expected lastSeq ('' = any), '1' when
 * the lease must have lapsed, the append's id, '1' on a retry, then per event: its JSON
 * body and its end status ('' unless turn.end). Returns {seq[, principal,
 * conversationId, idempotency key]} (the extra fields once the turn ended), or {0}
 * unknown turn, {-1} already ended, {-2} lastSeq moved, {-3} lease held.
 *
 * The append's last entry carries its id, its time and, on turn.end, the end status (see
 * `Head` in codec.ts). A retry of an append whose reply was lost (a connection cut, a
 * failover) finds its id among the newest entries and answers what the first attempt
 * did instead of logging the events twice.
 *
 * Written for few calls per event: the newest entry says where the log stands and
 * whether it ended, so an append reads one entry and writes its entries, nothing else.
 * The record is written when its status changes (the first append, the end); the record
 * is read only before the first entry. A live turn's TTLs are kept up by the lease
 * renewal, so an append only gives the stream its TTL when it creates it, and all TTLs
 * at the end.
 */
export const APPEND = new Script(`
local function ended_reply(seq)
  local info = redis.call('HMGET', KEYS[1], 'principal', 'conversationId', 'idem')
  return {seq, info[1], info[2], info[3] or ''}
end
local seq, ended
local top = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
local from_record = not (top and top[2][5] == 't')
if from_record then
  -- No entry yet (or only ones written before entries carried their time): the record says.
  local state = redis.call('HMGET', KEYS[1], 'lastSeq', 'endedAt')
  if not state[1] then return {0} end
  seq = tonumber(state[1])
  ended = state[2] ~= false
else
  seq = tonumber(string.match(top[1], '^%d+'))
  ended = top[2][7] == 's'
end
if ARGV[8] == '1' then
  for _, entry in ipairs(redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 16)) do
    if entry[2][4] == ARGV[7] then
      local found = tonumber(string.match(entry[1], '^%d+'))
      if ended then return ended_reply(found) end
      return {found}
    end
  end
end
if ended then return {-1} end
if ARGV[5] ~= '' and tonumber(ARGV[5]) ~= seq then return {-2} end
if ARGV[6] == '1' and redis.call('EXISTS', KEYS[3]) == 1 then return {-3} end
local status = 'streaming'
for i = 9, #ARGV, 2 do
  seq = seq + 1
  if ARGV[i + 1] ~= '' then status = ARGV[i + 1] end
  -- The entry id is the seq, so Redis itself refuses a second event with the same seq.
  local id = string.format('%d-0', seq)
  if i + 2 <= #ARGV then
    redis.call('XADD', KEYS[2], id, 'e', ARGV[i])
  elseif status ~= 'streaming' then
    redis.call('XADD', KEYS[2], id, 'e', ARGV[i], 'a', ARGV[7], 't', ARGV[1], 's', status)
  else
    redis.call('XADD', KEYS[2], id, 'e', ARGV[i], 'a', ARGV[7], 't', ARGV[1])
  end
end
local ended_now = status ~= 'streaming'
local last = string.format('%d', seq)
if ended_now then
  redis.call('HSET', KEYS[1], 'status', status, 'endedAt', ARGV[1], 'lastSeq', last, 'updatedAt', ARGV[1])
elseif from_record then
  redis.call('HSET', KEYS[1], 'status', status, 'lastSeq', last, 'updatedAt', ARGV[1])
end
-- Same slot as the turn: followers on any instance hear of the append from this shard alone.
if KEYS[6] then redis.call('SPUBLISH', KEYS[6], last) end
if not ended_now then
  if not top then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
  return {seq}
end
-- Retention counts from turn.end.
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[4], ARGV[2])
redis.call('PEXPIRE', KEYS[5], ARGV[3])
redis.call('DEL', KEYS[3])
return ended_reply(seq)
`);

/**
 * KEYS: turn, events, lease, cancel, tombstone. ARGV: owner, leaseMs, key ttl, tombstone
 * ttl. 1 = held, 0 = turn ended/gone (or held by another).
 */
export const RENEW = new Script(`
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'endedAt') == 1 then return 0 end
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

/** KEYS: turn. ARGV: the idempotency key as the log names it. Remembered so whoever ends the turn can shorten the key's life. */
export const MARK_IDEMPOTENCY = new Script(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'idem', ARGV[1])
return 1
`);

/** KEYS: idempotency key. ARGV: record, ttl. Returns the existing record or nil. */
export const PUT_IF_ABSENT = new Script(`
local found = redis.call('GET', KEYS[1])
if found then return found end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
`);

/**
 * KEYS: a key. ARGV: the value expected there. Deletes the key only if it still holds that
 * value: a lease released by its owner, an idempotency record nobody has replaced.
 */
export const DELETE_IF_SAME = new Script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);

/**
 * KEYS: idempotency key. ARGV: turn id, ttl. Sets the record's TTL only while it still
 * names that turn, so a late or repeated step of one turn never shortens another's key.
 */
export const TOUCH_IDEMPOTENCY = new Script(`
local found = redis.call('GET', KEYS[1])
if not found then return 0 end
local ok, record = pcall(cjson.decode, found)
if not ok or type(record) ~= 'table' or record['turnId'] ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
`);

/**
 * KEYS: turn, events. ARGV: seq, textSha256, at. The receipt rules of docs/protocol.md
 * section 10 (the same as `applyReceipt` in turn-log.ts), checked against the `turn.end`
 * the log holds and recorded in one step: 'unknown', 'not_ended', 'invalid_seq',
 * 'mismatch' or 'recorded'.
 */
export const DELIVER = new Script(`
local state = redis.call('HMGET', KEYS[1], 'lastSeq', 'endedAt', 'delivery')
if not state[1] then return 'unknown' end
if not state[2] then return 'not_ended' end
if tonumber(ARGV[1]) ~= tonumber(state[1]) then return 'invalid_seq' end
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
if not last then return 'unknown' end
local ok, body = pcall(cjson.decode, last[2][2])
local current = state[3] or 'pending'
if not ok or type(body) ~= 'table' or body['textSha256'] ~= ARGV[2] then
  -- Delivered stays delivered: one device's bad copy does not undo another's proof.
  if current == 'pending' then redis.call('HSET', KEYS[1], 'delivery', 'mismatch', 'deliveryAt', ARGV[3]) end
  return 'mismatch'
end
if current ~= 'delivered' then redis.call('HSET', KEYS[1], 'delivery', 'delivered', 'deliveryAt', ARGV[3]) end
return 'recorded'
`);
