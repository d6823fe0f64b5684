/*
 * The mailbox port's atomic operations, as Lua (the conventions of lib/store/credits/scripts.ts: KEYS, ARGV and
 * the reply above each script; plain string work, no cjson). The redis adapter (redis.ts) is the only caller.
 */

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
