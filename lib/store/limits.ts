import { Ratelimit } from "@upstash/ratelimit";
import { ExpiringMap } from "./memory-support";
import { call, flatHash, integer, integerPair, type RedisContext } from "./redis-support";
import { z } from "zod";
import { acquireSlotScript, recordBackoffFailureScript } from "./scripts";

export interface RateLimitResult {
  success: boolean;
  limit: number;
  remaining: number;
  /** Epoch milliseconds when the current window ends. */
  reset: number;
  /** True when the store could not be asked and the request was let through (rate limits fail open). */
  failedOpen?: boolean;
}

/** Consecutive failures of one subject (a sign-in e-mail from one address) and until when it must wait. */
export interface BackoffState {
  failures: number;
  /** Epoch ms before which the next attempt is refused (0: not blocked). */
  until: number;
}

/** How failures turn into waits: `free` failures cost nothing, then `baseMs` doubling per failure up to `maxMs`. */
export interface BackoffPolicy {
  free: number;
  baseMs: number;
  maxMs: number;
  /** The record is forgotten this long after the last failure. */
  ttlMs: number;
}

/** What `acquireSlot` answers: whether the holder has a slot, and who holds the group's slots now. */
export interface SlotResult {
  acquired: boolean;
  /** The group's holders after the call (the caller's included when acquired), soonest to expire first. */
  holders: string[];
}

/**
 * Request rate limits (lib/keys, sign-in), sign-in back-off (lib/accounts), and counted slots (open MCP SSE streams
 * per account, lib/mcp).
 */
export interface LimitStore {
  /**
   * Count `weight` (default 1) hits against `identifier`'s fixed window of `limit` per `windowMs`; fails open. All or
   * nothing: a hit that does not fit in what is left of the window is refused and not counted, so a refused MCP batch
   * takes none of the key's remaining requests (`remaining` is then what is still left).
   */
  rateLimit(input: { bucket: string; identifier: string; limit: number; windowMs: number; weight?: number }): Promise<RateLimitResult>;
  /** The back-off record of `subject`, or null when it has none. */
  getBackoff(subject: string): Promise<BackoffState | null>;
  /** Count one more failure of `subject` at `now` and return its new state (atomic: concurrent failures all count). */
  recordBackoffFailure(subject: string, now: number, policy: BackoffPolicy): Promise<BackoffState>;
  /** Forget `subject`'s failures (a success). */
  clearBackoff(subject: string): Promise<void>;
  /**
   * Take one of `limit` slots of `group` for `holder` (renewing it if it already has one), for `ttlMs`: a slot its
   * holder does not renew in time frees itself, so a crashed instance cannot keep slots taken. Atomic.
   */
  acquireSlot(input: { group: string; holder: string; limit: number; ttlMs: number }): Promise<SlotResult>;
  /** Keep `holder`'s slot for another `ttlMs`, taking it again if it had expired (whatever the limit). */
  renewSlot(input: { group: string; holder: string; ttlMs: number }): Promise<void>;
  /** Give `holder`'s slot back (nothing if it has none). */
  releaseSlot(group: string, holder: string): Promise<void>;
}

/** Limits on Redis: @upstash/ratelimit's fixed window, and a `backoff:{subject}` hash changed by a Lua script. */
export function createRedisLimitStore({ redis, key }: RedisContext): LimitStore {
  const recordFailure = redis.createScript<unknown>(recordBackoffFailureScript);
  const acquire = redis.createScript<unknown>(acquireSlotScript);
  const limiters = new Map<string, Ratelimit>();
  const limiterFor = (bucket: string, limit: number, windowMs: number): Ratelimit => {
    const id = `${bucket}:${limit}:${windowMs}`;
    let limiter = limiters.get(id);
    if (!limiter) {
      limiter = new Ratelimit({
        redis,
        limiter: Ratelimit.fixedWindow(limit, `${windowMs} ms`),
        prefix: key.rateLimit(bucket),
        analytics: false,
        // No per-instance block cache: every instance (and the memory adapter) answers the same way.
        ephemeralCache: false,
        timeout: 3_000,
      });
      limiters.set(id, limiter);
    }
    return limiter;
  };

  return {
    async rateLimit({ bucket, identifier, limit, windowMs, weight = 1 }) {
      const failOpen = (reason: string): RateLimitResult => {
        console.warn(`[store] rate limit ${bucket} not checked (${reason}); letting the request through`);
        return { success: true, limit, remaining: limit, reset: Date.now() + windowMs, failedOpen: true };
      };
      const limiter = limiterFor(bucket, limit, windowMs);
      try {
        const result = await limiter.limit(identifier, { rate: weight });
        if (result.reason === "timeout") return failOpen("timeout");
        const answer = { success: result.success, limit: result.limit, remaining: result.remaining, reset: result.reset };
        // A refused single hit changes nothing (the window is full either way); a refused heavier one is given back.
        return result.success || weight === 1 ? answer : { ...answer, remaining: await giveBack(limiter, bucket, identifier, weight) };
      } catch (error) {
        // Rate limits fail open: a Redis hiccup should not turn into an outage of its own.
        return failOpen(error instanceof Error ? error.name : "error");
      }
    },

    async getBackoff(subject) {
      const record = flatHash.nullable().parse(await call("getBackoff", () => redis.hgetall(key.backoff(subject))));
      if (!record?.failures) return null;
      return { failures: integer.parse(record.failures), until: integer.parse(record.until ?? 0) };
    },

    async recordBackoffFailure(subject, now, policy) {
      const reply = await call("recordBackoffFailure", () =>
        recordFailure.exec(
          [key.backoff(subject)],
          [String(now), String(policy.free), String(policy.baseMs), String(policy.maxMs), String(policy.ttlMs)],
        ),
      );
      const [failures, until] = integerPair.parse(reply);
      return { failures, until };
    },

    async clearBackoff(subject) {
      await call("clearBackoff", () => redis.del(key.backoff(subject)));
    },

    async acquireSlot({ group, holder, limit, ttlMs }) {
      const now = Date.now();
      const reply = await call("acquireSlot", () =>
        acquire.exec([key.slots(group)], [String(now), holder, String(limit), String(ttlMs), String(now + ttlMs)]),
      );
      const [acquired, ...holders] = z.tuple([integer], z.string()).parse(reply);
      return { acquired: acquired === 1, holders };
    },

    async renewSlot({ group, holder, ttlMs }) {
      await call("renewSlot", async () => {
        const pipeline = redis.multi();
        pipeline.zadd(key.slots(group), { score: Date.now() + ttlMs, member: holder });
        pipeline.pexpire(key.slots(group), ttlMs);
        await pipeline.exec();
      });
    },

    async releaseSlot(group, holder) {
      await call("releaseSlot", () => redis.zrem(key.slots(group), holder));
    },
  };
}

/**
 * Take back a refused hit of `weight` (@upstash/ratelimit counts a negative rate as a refund) and return what is left
 * of the window. Should the window end between the hit and the refund, the next window starts `weight` lighter: rare,
 * and in the client's favour. A failed refund is logged; the window then stays as the refused hit left it.
 */
async function giveBack(limiter: Ratelimit, bucket: string, identifier: string, weight: number): Promise<number> {
  try {
    return (await limiter.limit(identifier, { rate: -weight })).remaining;
  } catch (error) {
    console.warn(`[store] rate limit ${bucket}: a refused hit of ${weight} could not be given back (${error instanceof Error ? error.name : "error"})`);
    return 0;
  }
}

/** Limits for one process, with the same algorithms as the redis adapter. */
export function createMemoryLimitStore(): LimitStore {
  const rateWindows = new ExpiringMap<number>();
  const backoffs = new ExpiringMap<BackoffState>();
  /** group → holder → expiry (epoch ms), as the `slots:{group}` sorted sets. */
  const slots = new Map<string, Map<string, number>>();
  /** The group's live holders, soonest to expire first (expired ones dropped, as the script does). */
  const liveHolders = (group: string, now: number): Map<string, number> => {
    const holders = slots.get(group) ?? new Map<string, number>();
    for (const [holder, expiry] of holders) if (expiry <= now) holders.delete(holder);
    if (holders.size === 0) slots.delete(group);
    return holders;
  };
  const sortedHolders = (holders: Map<string, number>) => [...holders].sort((a, b) => a[1] - b[1]).map(([holder]) => holder);
  return {
    async rateLimit({ bucket, identifier, limit, windowMs, weight = 1 }) {
      // Same algorithm as @upstash/ratelimit's fixedWindow, which the redis adapter uses.
      const window = Math.floor(Date.now() / windowMs);
      const id = `${bucket}:${identifier}:${window}`;
      const used = rateWindows.get(id) ?? 0;
      const reset = (window + 1) * windowMs;
      // A hit that does not fit is not counted (see the port).
      if (used + weight > limit) return { success: false, limit, remaining: Math.max(0, limit - used), reset };
      rateWindows.set(id, used + weight, windowMs);
      return { success: true, limit, remaining: limit - used - weight, reset };
    },

    async getBackoff(subject) {
      const state = backoffs.get(subject);
      return state ? { ...state } : null;
    },

    async recordBackoffFailure(subject, now, policy) {
      // Same rule as the redis adapter's recordBackoffFailure script.
      const failures = (backoffs.get(subject)?.failures ?? 0) + 1;
      const over = failures - policy.free;
      const until = over > 0 ? now + Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(over - 1, 40)) : 0;
      backoffs.set(subject, { failures, until }, policy.ttlMs);
      return { failures, until };
    },

    async clearBackoff(subject) {
      backoffs.delete(subject);
    },

    async acquireSlot({ group, holder, limit, ttlMs }) {
      const now = Date.now();
      const holders = liveHolders(group, now);
      const acquired = holders.has(holder) || holders.size < limit;
      if (acquired) {
        holders.set(holder, now + ttlMs);
        slots.set(group, holders);
      }
      return { acquired, holders: sortedHolders(holders) };
    },

    async renewSlot({ group, holder, ttlMs }) {
      const holders = liveHolders(group, Date.now());
      holders.set(holder, Date.now() + ttlMs);
      slots.set(group, holders);
    },

    async releaseSlot(group, holder) {
      const holders = slots.get(group);
      holders?.delete(holder);
      if (holders?.size === 0) slots.delete(group);
    },
  };
}
