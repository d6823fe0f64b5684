/*
 * The API key port's atomic operations, as Lua (the conventions of lib/store/credits/scripts.ts: KEYS, ARGV and
 * the reply above each script; plain string work, no cjson). The redis adapter (redis.ts) is the only caller.
 */

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
