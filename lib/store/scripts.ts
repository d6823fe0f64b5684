/**
 * The store's atomic operations, as Lua run by Redis (EVALSHA, falling back to EVAL). Each script's KEYS, ARGV
 * and return tuple are documented above it; the redis adapters of the ports (lib/store/credits/redis.ts,
 * keys/redis.ts, and the redis halves of accounts.ts, idempotency.ts, limits.ts, mailbox.ts) are the only callers
 * and parse every reply.
 * Plain Lua string work only (no cjson), so they run unchanged on Upstash and stock Redis.
 *
 * Ledger entries are JSON strings appended to a list. The caller passes the entry's fixed fields as JSON
 * (`{"id":…,"at":…,"reason":…}`) and the script prepends the amounts it decides:
 * `{"balanceAfter":N,"delta":D[,"pages":P],` .. fixed fields without their `{`.
 */

export const ledgerEntryHelper = `
local function ledger_entry(balance_after, delta, pages, fixed)
  local head = '{"balanceAfter":' .. balance_after .. ',"delta":' .. delta
  if pages then head = head .. ',"pages":' .. pages end
  return head .. ',' .. string.sub(fixed, 2)
end
`;

/**
 * createUser
 * KEYS: [1] email index, [2] user hash, [3] balance, [4] ledger
 * ARGV: [1] userId, [2] email, [3] passwordHash, [4] createdAt, [5] signup credits, [6] ledger fixed fields JSON
 * Returns: 1 created | 0 e-mail already taken (nothing written)
 */
export const createUserScript = `${ledgerEntryHelper}
if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 0 end
redis.call('HSET', KEYS[2], 'id', ARGV[1], 'email', ARGV[2], 'passwordHash', ARGV[3], 'createdAt', ARGV[4])
local credits = tonumber(ARGV[5])
if credits > 0 then
  local balance = redis.call('INCRBY', KEYS[3], credits)
  redis.call('RPUSH', KEYS[4], ledger_entry(balance, credits, nil, ARGV[6]))
end
return 1
`;

/**
 * createApiKey — only active keys count against the maximum (revoked ones are in another hash).
 * KEYS: [1] the user's active-keys hash (keyId → record JSON), [2] the key's hash index
 * ARGV: [1] keyId, [2] record JSON, [3] max active keys, [4] userId, [5] start, [6] name, [7] createdAt
 * Returns: 1 created | 0 the user already has max active keys (nothing written)
 */
export const createApiKeyScript = `
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], 'keyId', ARGV[1], 'userId', ARGV[4], 'start', ARGV[5], 'name', ARGV[6], 'createdAt', ARGV[7])
return 1
`;

/**
 * resolveApiKey — the hot path: one round trip per authenticated request.
 * KEYS: [1] the key's hash index
 * ARGV: [1] now (epoch ms), [2] minimum interval between lastUsed writes (ms)
 * Returns: nil unknown or revoked | flat HGETALL array {field, value, …} as it was before this use
 *          (fields keyId, userId, start, name, createdAt, lastUsedMs?). Sets lastUsedMs = now when the previous
 *          use is older than the interval, so a busy key costs one write a minute.
 */
export const resolveApiKeyScript = `
local record = redis.call('HGETALL', KEYS[1])
if #record == 0 then return nil end
local last = tonumber(redis.call('HGET', KEYS[1], 'lastUsedMs') or '0')
if tonumber(ARGV[1]) - last >= tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], 'lastUsedMs', ARGV[1])
end
return record
`;

/**
 * revokeApiKey — the record moves to the revoked-keys hash (kept, to list it and to name it in the ledger) and the
 * hash index goes, so the key never resolves again. The last use, which lives on the index, is kept in the record:
 * `,"lastUsedMs":N` is added before the record JSON's closing brace (plain string work, like the ledger entries).
 * KEYS: [1] the user's active-keys hash, [2] the user's revoked-keys hash, [3] the key's hash index
 * ARGV: [1] keyId, [2] revoked record JSON (with revokedAt)
 * Returns: 1 revoked (index deleted, record moved) | 0 not an active key of this user
 */
export const revokeApiKeyScript = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
local record = ARGV[2]
local last = redis.call('HGET', KEYS[3], 'lastUsedMs')
if last and string.match(last, '^%d+$') then
  record = string.sub(record, 1, -2) .. ',"lastUsedMs":' .. last .. '}'
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], record)
redis.call('DEL', KEYS[3])
return 1
`;

/**
 * reserveCredits — never overdraws: the check and the decrement are one atomic step. The reservation key holds the
 * pages while open and `closed` once released (a tombstone): its existence refuses any later reserve of the same
 * request id. Open reservations are indexed by deadline, for the sweeper.
 * KEYS: [1] balance, [2] ledger, [3] usage hash (day → pages), [4] reservation of this request,
 *       [5] open-reservation index (sorted set: deadline → "userId|requestId")
 * ARGV: [1] pages (> 0), [2] ledger fixed fields JSON, [3] day (YYYY-MM-DD), [4] reservation TTL (ms),
 *       [5] deadline (epoch ms), [6] index member
 * Returns: {1, balance after} reserved | {0, balance} not enough credits (nothing written) |
 *          {-1, balance} this request id already has or had a reservation (nothing written)
 */
export const reserveCreditsScript = `${ledgerEntryHelper}
local pages = tonumber(ARGV[1])
local balance = tonumber(redis.call('GET', KEYS[1]) or '0')
if redis.call('EXISTS', KEYS[4]) == 1 then return {-1, balance} end
if balance < pages then return {0, balance} end
local after = redis.call('DECRBY', KEYS[1], pages)
redis.call('RPUSH', KEYS[2], ledger_entry(after, -pages, pages, ARGV[2]))
redis.call('HINCRBY', KEYS[3], ARGV[3], pages)
redis.call('SET', KEYS[4], pages, 'PX', ARGV[4])
redis.call('ZADD', KEYS[5], ARGV[5], ARGV[6])
return {1, after}
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

/**
 * claimIdempotency — first caller wins; everyone else sees the stored record.
 * KEYS: [1] idempotency record (hash)
 * ARGV: [1] fingerprint, [2] token, [3] createdAt, [4] lease (ms): how long an in-progress claim blocks retries
 * Returns: {'claimed'} | {'exists', HGETALL flat array}
 */
export const claimIdempotencyScript = `
local existing = redis.call('HGETALL', KEYS[1])
if #existing > 0 then return {'exists', existing} end
redis.call('HSET', KEYS[1], 'state', 'in-progress', 'fingerprint', ARGV[1], 'token', ARGV[2], 'createdAt', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {'claimed'}
`;

/**
 * completeIdempotency
 * KEYS: [1] idempotency record
 * ARGV: [1] token of the claim, [2] response, [3] TTL of the done record (ms)
 * Returns: 1 stored | 0 the claim is gone or belongs to someone else
 */
export const completeIdempotencyScript = `
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'state', 'done', 'response', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`;

/**
 * releaseIdempotency
 * KEYS: [1] idempotency record
 * ARGV: [1] token of the claim
 * Returns: 1 released | 0 not an in-progress claim with this token
 */
export const releaseIdempotencyScript = `
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
if redis.call('HGET', KEYS[1], 'state') ~= 'in-progress' then return 0 end
redis.call('DEL', KEYS[1])
return 1
`;

/**
 * pushMailbox
 * KEYS: [1] mailbox marker, [2] message list
 * ARGV: [1] message, [2] TTL (ms), [3] max messages kept
 * Returns: 1 queued | 0 the mailbox is not open
 */
export const pushMailboxScript = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[3]), -1)
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
`;

/**
 * drainMailbox
 * KEYS: [1] message list
 * Returns: the messages, oldest first (the list is emptied)
 */
export const drainMailboxScript = `
local messages = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return messages
`;

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

/**
 * createMarker — the store marker (lib/store/meta.ts), unless one is there: SET NX for a hash.
 * KEYS: [1] the marker hash
 * ARGV: field, value, … (`initializedAt` first)
 * Returns: the marker's fields afterwards, as HGETALL's flat array
 */
export const createMarkerScript = `
if redis.call('HEXISTS', KEYS[1], 'initializedAt') == 0 then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return redis.call('HGETALL', KEYS[1])
`;
