import { ledgerEntryHelper } from "../credits/scripts";

/*
 * The job port's atomic steps, as Lua (same conventions as lib/store/credits/scripts.ts: KEYS, ARGV and the reply above
 * each script; plain string work, no cjson). A job's credits are a reservation of the credit port's kind: the key
 * holds the credits still reserved (an integer) while the job runs and `closed` after it ended. A stored page
 * spends one of them; failures spend nothing, so whatever is left when the job ends is exactly what comes back.
 */

/**
 * createJob — reserve and create in one step.
 * KEYS: [1] job hash, [2] account's job index (sorted set), [3] account's queued pages, [4] balance, [5] ledger,
 *       [6] usage hash, [7] reservation, [8] open-reservation index; optionally [9] the account's job-files set and
 *       [10…] the file's chunks, which then take the job's lifetime (they were stored with a short one)
 * ARGV: [1] pages (> 0), [2] most queued pages, [3] ledger fixed fields JSON, [4] day, [5] reservation TTL (ms),
 *       [6] deadline (epoch ms), [7] reservation member, [8] index score, [9] job id, [10] job keys expire at
 *       (epoch ms), [11…] the record's field, value pairs
 * Returns: {1, balance after} | {0, balance} short (nothing written) | {-1, queued pages} over the queue cap |
 *          {-2, 0} the job or its reservation exists
 */
/** The account's job-files set lives as long as its longest-lived file (KEYS[n] is the set). */
const extendFiles = (set: string) => `local longest = redis.call('ZRANGE', ${set}, -1, -1, 'WITHSCORES')
  if longest[2] then redis.call('PEXPIREAT', ${set}, longest[2]) end`;
const extendFilesSet = extendFiles("KEYS[9]");

/**
 * keepBytes — count something an account makes the store keep (a job's file, a kept rendering, a kept answer) against
 * the account's cap, or refuse it. Kept renderings (members starting `r:`) can be made again: the ones that expire
 * first are dropped to make room, and their members come back in the reply so that the caller deletes their keys.
 * Everything else (job files, kept answers) is never dropped: past the cap, the new one is refused.
 * KEYS: [1] the account's kept-bytes sorted set (member `{name}:{bytes}`, score: when it goes)
 * ARGV: [1] now (epoch ms), [2] member, [3] bytes, [4] the account's cap, [5] when the member goes (epoch ms)
 * Returns: {1, used after, -1, dropped members…} | {0, bytes kept that cannot be dropped, when the first of them goes
 *          (or -1)}
 */
export const keepBytesScript = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local need = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
local used, fixed, first = 0, 0, -1
local droppable = {}
local members = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #members, 2 do
  local member = members[i]
  if member ~= ARGV[2] then
    local size = tonumber(string.match(member, ':(%d+)$')) or 0
    used = used + size
    if string.sub(member, 1, 2) == 'r:' then
      table.insert(droppable, member)
    else
      fixed = fixed + size
      if first < 0 then first = tonumber(members[i + 1]) end
    end
  end
end
if fixed + need > cap then return {0, fixed, first} end
local reply = {1, 0, -1}
local at = 1
while used + need > cap and droppable[at] do
  local member = droppable[at]
  redis.call('ZREM', KEYS[1], member)
  used = used - (tonumber(string.match(member, ':(%d+)$')) or 0)
  table.insert(reply, member)
  at = at + 1
end
redis.call('ZADD', KEYS[1], ARGV[5], ARGV[2])
${extendFiles("KEYS[1]")}
reply[2] = used + need
return reply
`;

export const createJobScript = `${ledgerEntryHelper}
local pages = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[7]) == 1 then return {-2, 0} end
local queued = tonumber(redis.call('GET', KEYS[3]) or '0') or 0
if queued + pages > tonumber(ARGV[2]) then return {-1, queued} end
local balance = tonumber(redis.call('GET', KEYS[4]) or '0')
if balance < pages then return {0, balance} end
local after = redis.call('DECRBY', KEYS[4], pages)
redis.call('RPUSH', KEYS[5], ledger_entry(after, -pages, pages, ARGV[3]))
redis.call('HINCRBY', KEYS[6], ARGV[4], pages)
redis.call('SET', KEYS[7], pages, 'PX', ARGV[5])
redis.call('ZADD', KEYS[8], ARGV[6], ARGV[7])
redis.call('HSET', KEYS[1], 'status', 'queued', 'pagesDone', 0, 'pagesFailed', 0, 'creditsUsed', 0, 'creditsRefunded', 0)
for i = 11, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIREAT', KEYS[1], ARGV[10])
if #KEYS >= 9 then
  local expires = redis.call('HGET', KEYS[1], 'expiresAt')
  redis.call('ZADD', KEYS[9], 'XX', expires, ARGV[9] .. ':' .. (redis.call('HGET', KEYS[1], 'bytes') or '0'))
  ${extendFilesSet}
  for i = 10, #KEYS do redis.call('PEXPIREAT', KEYS[i], expires) end
end
redis.call('ZADD', KEYS[2], ARGV[8], ARGV[9])
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -1001)
redis.call('INCRBY', KEYS[3], pages)
return {1, after}
`;

/**
 * startJob — a queued job is running from now.
 * KEYS: [1] job hash
 * ARGV: [1] now (epoch ms)
 * Returns: 1 started | 0 not queued
 */
export const startJobScript = `
if redis.call('HGET', KEYS[1], 'status') ~= 'queued' then return 0 end
redis.call('HSET', KEYS[1], 'status', 'running', 'startedAt', ARGV[1])
return 1
`;

/** How a page step ends: the job's counters checked after a page was recorded. */
const pageEpilogue = `
local expires = redis.call('HGET', KEYS[1], 'expiresAt')
if expires then
  redis.call('PEXPIREAT', KEYS[2], expires)
  redis.call('PEXPIREAT', KEYS[3], expires)
end
local done = tonumber(redis.call('HGET', KEYS[1], 'pagesDone') or '0')
local failed = tonumber(redis.call('HGET', KEYS[1], 'pagesFailed') or '0')
local last = 0
if done + failed >= tonumber(redis.call('HGET', KEYS[1], 'pagesTotal') or '0') then last = 1 end
`;

const startIfQueued = `
if status == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'running', 'startedAt', ARGV[1])
  status = 'running'
end
`;

/**
 * storePages — each page's result is kept and its credit spent, or neither.
 * KEYS: [1] job hash, [2] pages hash, [3] failed pages hash, [4] reservation, [5] account's queued pages
 * ARGV: [1] now (epoch ms), then page number, payload pairs
 * Returns: {stored, duplicates (the page already had a result or a failure), inactive (1: the job is not active or
 *          its reservation is gone — nothing stored), last (1: the job has no unread page left)}
 */
export const storePagesScript = `
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'queued' and status ~= 'running' then return {0, 0, 1, 0} end
${startIfQueued}
local stored = 0
local duplicates = 0
local inactive = 0
for i = 2, #ARGV, 2 do
  local page = ARGV[i]
  if redis.call('HEXISTS', KEYS[2], page) == 1 or redis.call('HEXISTS', KEYS[3], page) == 1 then
    duplicates = duplicates + 1
  else
    local outstanding = tonumber(redis.call('GET', KEYS[4]) or '')
    if not outstanding or outstanding < 1 then
      inactive = 1
      break
    end
    redis.call('HSET', KEYS[2], page, ARGV[i + 1])
    redis.call('DECRBY', KEYS[4], 1)
    stored = stored + 1
  end
end
if stored > 0 then
  redis.call('HINCRBY', KEYS[1], 'creditsUsed', stored)
  redis.call('HINCRBY', KEYS[1], 'pagesDone', stored)
  local queued = tonumber(redis.call('GET', KEYS[5]) or '0') or 0
  redis.call('DECRBY', KEYS[5], math.min(queued, stored))
end
${pageEpilogue}
return {stored, duplicates, inactive, last}
`;

/**
 * failPage — a page could not be read; its credit stays reserved until the job ends, and comes back then.
 * KEYS: as storePages
 * ARGV: [1] now (epoch ms), [2] page number, [3] the failure as `{"code","message"}` JSON
 * Returns: as storePages (stored counts the failure recorded)
 */
export const failPageScript = `
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'queued' and status ~= 'running' then return {0, 0, 1, 0} end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 or redis.call('HEXISTS', KEYS[3], ARGV[2]) == 1 then return {0, 1, 0, 0} end
${startIfQueued}
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
redis.call('HINCRBY', KEYS[1], 'pagesFailed', 1)
local queued = tonumber(redis.call('GET', KEYS[5]) or '0') or 0
if queued > 0 then redis.call('DECRBY', KEYS[5], 1) end
${pageEpilogue}
return {1, 0, 0, last}
`;

/**
 * endJob — refund what is still reserved, close the reservation, set the final status, and let the results expire.
 * KEYS: [1] job hash, [2] pages hash, [3] failed pages hash, [4] balance, [5] ledger, [6] usage hash, [7] reservation,
 *       [8] open-reservation index, [9] account's queued pages, [10] account's job-files set, [11…] source chunks
 *       (a succeeded job's file is kept with its results, another's deleted, and the account's count follows)
 * ARGV: [1] `finish` | `cancel` | `fail`, [2] error JSON or '', [3] now, [4] results expire at (epoch ms),
 *       [5] ledger fixed fields JSON, [6] day, [7] tombstone TTL (ms), [8] reservation member,
 *       [9] the record expires at (epoch ms)
 * Returns: {1, refunded, final status} | {0, 0, status} the job was not active (nothing changed)
 */
export const endJobScript = `${ledgerEntryHelper}
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'queued' and status ~= 'running' then return {0, 0, status or ''} end
local total = tonumber(redis.call('HGET', KEYS[1], 'pagesTotal') or '0')
local done = tonumber(redis.call('HGET', KEYS[1], 'pagesDone') or '0')
local failed = tonumber(redis.call('HGET', KEYS[1], 'pagesFailed') or '0')
local final = 'succeeded'
if ARGV[1] == 'cancel' then final = 'cancelled' elseif ARGV[1] == 'fail' or done == 0 then final = 'failed' end
-- The first write frees memory and is one Redis allows when it is out of memory (ZREM, DEL): a script whose first
-- write is allowed runs to its end. So a job that fails because Redis is full (its queue entry refused) still ends
-- and gives its credits back at once, instead of waiting for the sweeper at its deadline (issue 39 point 16).
redis.call('ZREM', KEYS[8], ARGV[8])
if final ~= 'succeeded' then
  for i = 11, #KEYS do redis.call('DEL', KEYS[i]) end
end
local unread = total - done - failed
if unread > 0 then
  local queued = tonumber(redis.call('GET', KEYS[9]) or '0') or 0
  redis.call('DECRBY', KEYS[9], math.min(queued, unread))
end
local refund = tonumber(redis.call('GET', KEYS[7]) or '') or 0
redis.call('SET', KEYS[7], 'closed', 'PX', ARGV[7])
if refund > 0 then
  local after = redis.call('INCRBY', KEYS[4], refund)
  redis.call('RPUSH', KEYS[5], ledger_entry(after, refund, refund, ARGV[5]))
  redis.call('HINCRBY', KEYS[6], ARGV[6], -refund)
else
  refund = 0
end
-- Nothing left to refund here: the sweeper refunded the reservation at its deadline (the ledger has it as
-- \`expired\`), or every page was charged. Either way what came back is what was reserved and not used.
local shown = refund
if refund == 0 then
  local reserved = tonumber(redis.call('HGET', KEYS[1], 'creditsReserved') or '0') or 0
  local used = tonumber(redis.call('HGET', KEYS[1], 'creditsUsed') or '0') or 0
  shown = math.max(0, reserved - used)
end
redis.call('HSET', KEYS[1], 'status', final, 'finishedAt', ARGV[3], 'expiresAt', ARGV[4], 'creditsRefunded', shown)
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[2]) end
redis.call('PEXPIREAT', KEYS[1], ARGV[9])
redis.call('PEXPIREAT', KEYS[2], ARGV[4])
redis.call('PEXPIREAT', KEYS[3], ARGV[4])
local file = (redis.call('HGET', KEYS[1], 'id') or '') .. ':' .. (redis.call('HGET', KEYS[1], 'bytes') or '0')
if final == 'succeeded' then
  redis.call('ZADD', KEYS[10], 'XX', ARGV[4], file)
  ${extendFiles("KEYS[10]")}
else
  redis.call('ZREM', KEYS[10], file)
end
if final == 'succeeded' then
  for i = 11, #KEYS do redis.call('PEXPIREAT', KEYS[i], ARGV[4]) end
end
return {1, refund, final}
`;
