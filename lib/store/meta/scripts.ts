/*
 * The store marker port's atomic operations, as Lua (the conventions of lib/store/credits/scripts.ts: KEYS, ARGV and
 * the reply above each script; plain string work, no cjson). The redis adapter (redis.ts) is the only caller.
 */

/**
 * createMarker — the store marker (lib/store/meta/), unless one is there: SET NX for a hash.
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
