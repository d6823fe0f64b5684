/*
 * The webhook port's atomic steps, as Lua (the conventions of lib/store/credits/scripts.ts: KEYS, ARGV and the reply
 * above each script). The redis adapter (redis.ts) is the only caller; memory.ts does the same in one step.
 */

/**
 * recordEndpointFailure — one more failed attempt to a receiver: the circuit breaker's count, pause and disabling.
 * KEYS: [1] the receiver's hash, [2] the account's index of receivers (sorted set: last failure → receiver id)
 * ARGV: [1] now (epoch ms), [2] receiver, [3] url, [4] error, [5] free failures, [6] first pause (ms), [7] longest
 *       pause (ms), [8] disable after (ms), [9] keep (ms), [10] the receiver's id in the index, [11] pause jitter
 * Returns: the hash after, as HGETALL's flat array. A disabled receiver's record does not expire (nor its place in
 *          the index, scored +inf); a failing one's lasts `keep` after its last failure.
 */
export const recordEndpointFailureScript = `
local now = tonumber(ARGV[1])
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
if failures == 1 or not redis.call('HGET', KEYS[1], 'failingSince') then redis.call('HSET', KEYS[1], 'failingSince', ARGV[1]) end
local since = tonumber(redis.call('HGET', KEYS[1], 'failingSince'))
local over = failures - tonumber(ARGV[5])
local paused = 0
if over > 0 then
  local pause = math.min(tonumber(ARGV[7]), tonumber(ARGV[6]) * math.pow(2, math.min(over - 1, 40)))
  paused = math.floor(now + pause * tonumber(ARGV[11]))
end
redis.call('HSET', KEYS[1], 'receiver', ARGV[2], 'url', ARGV[3], 'lastError', ARGV[4], 'lastFailureAt', ARGV[1], 'pausedUntil', string.format('%d', paused))
local disabled = redis.call('HGET', KEYS[1], 'disabledAt')
if not disabled and now - since >= tonumber(ARGV[8]) then
  redis.call('HSET', KEYS[1], 'disabledAt', ARGV[1])
  disabled = ARGV[1]
end
-- The index keeps disabled receivers (score +inf) and those that failed within the keep time.
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[9]))
if disabled then
  redis.call('ZADD', KEYS[2], '+inf', ARGV[10])
  redis.call('PERSIST', KEYS[1])
else
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[10])
  redis.call('PEXPIRE', KEYS[1], ARGV[9])
end
return redis.call('HGETALL', KEYS[1])
`;
