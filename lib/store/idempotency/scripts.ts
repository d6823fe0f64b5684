/*
 * The idempotency port's atomic operations, as Lua (the conventions of lib/store/credits/scripts.ts: KEYS, ARGV and
 * the reply above each script; plain string work, no cjson). The redis adapter (redis.ts) is the only caller.
 */

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
