/*
 * The limit port's atomic operations, as Lua (the conventions of lib/store/credits/scripts.ts: KEYS, ARGV and
 * the reply above each script; plain string work, no cjson). The redis adapter (redis.ts) is the only caller.
 */

/**
 * acquireSlot — one of `limit` slots of a group (open MCP SSE streams of an account), held until released or until
 * its holder stops renewing it: slots whose expiry has passed are dropped first, so an instance that died frees its
 * slots by itself.
 * KEYS: [1] the group's slots (sorted set: expiry epoch ms → holder)
 * ARGV: [1] now (epoch ms), [2] holder, [3] limit, [4] TTL (ms), [5] the slot's expiry (now + TTL, epoch ms)
 * Returns: {1, 'holder', …} acquired (or already held, then renewed) | {0, 'holder', …} all taken; the holders
 *          listed are those of the group after this call, oldest expiry first
 */
export const acquireSlotScript = `
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local taken = redis.call('ZSCORE', KEYS[1], ARGV[2]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3])
if taken then
  redis.call('ZADD', KEYS[1], ARGV[5], ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
local holders = redis.call('ZRANGE', KEYS[1], 0, -1)
table.insert(holders, 1, taken and 1 or 0)
return holders
`;

/**
 * recordBackoffFailure
 * KEYS: [1] the subject's back-off hash (failures, until)
 * ARGV: [1] now (epoch ms), [2] free failures, [3] base wait ms, [4] max wait ms, [5] record TTL ms
 * Returns: { failures, until } — until = now + min(max, base × 2^(failures − free − 1)) once failures > free, else 0
 */
export const recordBackoffFailureScript = `
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
local now = tonumber(ARGV[1])
local over = failures - tonumber(ARGV[2])
local untilMs = 0
if over > 0 then
  local wait = tonumber(ARGV[3]) * math.pow(2, math.min(over - 1, 40))
  untilMs = math.floor(now + math.min(tonumber(ARGV[4]), wait))
end
redis.call('HSET', KEYS[1], 'until', untilMs)
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return { failures, untilMs }
`;
