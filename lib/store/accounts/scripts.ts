import { ledgerEntryHelper } from "../credits/scripts";

/*
 * The account port's atomic operations, as Lua (the conventions of lib/store/credits/scripts.ts: KEYS, ARGV and
 * the reply above each script; plain string work, no cjson). The redis adapter (redis.ts) is the only caller.
 */

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
