/*
 * The OAuth port's atomic operations, as Lua (the conventions of lib/store/credits/scripts.ts: KEYS, ARGV and the
 * reply above each script; plain string work, no cjson). The redis adapter (redis.ts) is the only caller.
 */

/**
 * consumeSingleUse — a code or refresh token is used once: the first caller deletes it and leaves a "used" marker
 * holding the grant it belongs to (empty for a code, whose grant is made after), so a replay can be recognised.
 * KEYS: [1] the value's record, [2] its used marker
 * ARGV: [1] marker TTL (ms), [2] grant id to remember ('' when not known yet)
 * Returns: 1 consumed by this call | 0 unknown, expired or already used
 */
export const consumeSingleUseScript = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[1])
return 1
`;

/**
 * upsertGrant — one grant per account and client: an existing one (listed in the account's grants) is returned as
 * it is, for the caller to update; otherwise the new one is stored and indexed.
 * KEYS: [1] the account's grants hash (grantId → JSON), [2] the account's client index (clientId → grantId)
 * ARGV: [1] clientId, [2] new grant id, [3] new grant JSON
 * Returns: the existing grant's JSON | '' when the new one was stored
 */
export const upsertGrantScript = `
local existing = redis.call('HGET', KEYS[2], ARGV[1])
if existing then
  local record = redis.call('HGET', KEYS[1], existing)
  if record then return record end
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return ''
`;

/**
 * updateGrant — replace a grant's record only while it exists (a revoke in between wins).
 * KEYS: [1] the account's grants hash
 * ARGV: [1] grant id, [2] grant JSON
 * Returns: 1 updated | 0 gone
 */
export const updateGrantScript = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`;

/**
 * revokeGrant — the grant, its last use and its client index entry (when it still points at this grant) go.
 * KEYS: [1] grants hash, [2] client index, [3] last-use hash (grantId → epoch ms)
 * ARGV: [1] grant id, [2] client id
 * Returns: 1 revoked | 0 not an active grant of this account
 */
export const revokeGrantScript = `
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[3], ARGV[1])
if redis.call('HGET', KEYS[2], ARGV[2]) == ARGV[1] then redis.call('HDEL', KEYS[2], ARGV[2]) end
return 1
`;

/**
 * touchGrant — the access-token hot path after the token's own GET: is its grant active, and record its use at most
 * once per interval.
 * KEYS: [1] grants hash, [2] last-use hash
 * ARGV: [1] grant id, [2] now (epoch ms), [3] minimum interval between writes (ms)
 * Returns: 1 active | 0 revoked
 */
export const touchGrantScript = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
local last = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if tonumber(ARGV[2]) - last >= tonumber(ARGV[3]) then redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) end
return 1
`;
