/**
 * The credit port's atomic operations, as Lua run by Redis (EVALSHA, falling back to EVAL). Each script's KEYS,
 * ARGV and return tuple are documented above it; the redis adapter (redis.ts) is the only caller and parses every
 * reply. Every concern's scripts (lib/store/<concern>/scripts.ts) follow these conventions, and do plain Lua string
 * work only (no cjson), so they run unchanged on Upstash and stock Redis.
 *
 * Ledger entries are JSON strings appended to a list. The caller passes the entry's fixed fields as JSON
 * (`{"id":…,"at":…,"reason":…}`) and the script prepends the amounts it decides:
 * `{"balanceAfter":N,"delta":D[,"pages":P],` .. fixed fields without their `{`. The account and job scripts that
 * write ledger entries use `ledgerEntryHelper` from here.
 */

export const ledgerEntryHelper = `
local function ledger_entry(balance_after, delta, pages, fixed)
  local head = '{"balanceAfter":' .. balance_after .. ',"delta":' .. delta
  if pages then head = head .. ',"pages":' .. pages end
  return head .. ',' .. string.sub(fixed, 2)
end
`;

/**
 * releaseCredits — settle (give back reserved − used), refund (give back everything) or expire (the sweeper) one
 * reservation, and close it: out of the index, a tombstone left behind.
 * KEYS: [1] balance, [2] ledger, [3] usage hash, [4] reservation of this request, [5] open-reservation index
 * ARGV: [1] pages to give back (≥ 0), [2] ledger fixed fields JSON, [3] day (YYYY-MM-DD), [4] tombstone TTL (ms),
 *       [5] index member
 * Returns: {refunded, balance after}. refunded = min(ARGV[1], still reserved); a closed or unknown reservation
 *          gives back nothing (and is closed), so a second settle, refund or sweep of the same request is a no-op.
 */
export const releaseCreditsScript = `${ledgerEntryHelper}
local outstanding = tonumber(redis.call('GET', KEYS[4]) or '0') or 0
local refund = math.min(tonumber(ARGV[1]), outstanding)
redis.call('SET', KEYS[4], 'closed', 'PX', ARGV[4])
redis.call('ZREM', KEYS[5], ARGV[5])
if refund <= 0 then return {0, tonumber(redis.call('GET', KEYS[1]) or '0')} end
local after = redis.call('INCRBY', KEYS[1], refund)
redis.call('RPUSH', KEYS[2], ledger_entry(after, refund, refund, ARGV[2]))
redis.call('HINCRBY', KEYS[3], ARGV[3], -refund)
return {refund, after}
`;

/**
 * grantCredits
 * KEYS: [1] balance, [2] ledger
 * ARGV: [1] credits (> 0), [2] ledger fixed fields JSON
 * Returns: balance after
 */
export const grantCreditsScript = `${ledgerEntryHelper}
local credits = tonumber(ARGV[1])
local after = redis.call('INCRBY', KEYS[1], credits)
redis.call('RPUSH', KEYS[2], ledger_entry(after, credits, nil, ARGV[2]))
return after
`;

/**
 * ledgerPage — newest-first paging over an append-only list; the cursor is a list index, stable under appends.
 * KEYS: [1] ledger
 * ARGV: [1] limit (1–100), [2] cursor: entries before this index (-1: from the newest)
 * Returns: {first index returned, entry JSON oldest…newest}
 */
export const ledgerPageScript = `
local length = redis.call('LLEN', KEYS[1])
local before = tonumber(ARGV[2])
if before < 0 or before > length then before = length end
if before == 0 then return {0} end
local first = math.max(0, before - tonumber(ARGV[1]))
local entries = redis.call('LRANGE', KEYS[1], first, before - 1)
table.insert(entries, 1, first)
return entries
`;
