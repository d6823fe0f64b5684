import { Ratelimit } from "@upstash/ratelimit";
import { call, flatHash, integer, integerPair, type RedisContext } from "../redis-support";
import { z } from "zod";
import { acquireSlotScript, recordBackoffFailureScript } from "./scripts";
import type { LimitStore, RateLimitResult } from "./port";

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
        const answer = {
          success: result.success,
          limit: result.limit,
          remaining: result.remaining,
          reset: result.reset,
        };
        // A refused single hit changes nothing (the window is full either way); a refused heavier one is given back.
        return result.success || weight === 1
          ? answer
          : { ...answer, remaining: await giveBack(limiter, bucket, identifier, weight) };
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

    async claimOnce({ scope, id, ttlMs }) {
      const reply = await call("claimOnce", () => redis.set(key.once(scope, id), "1", { nx: true, px: ttlMs }));
      return reply !== null;
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
    console.warn(
      `[store] rate limit ${bucket}: a refused hit of ${weight} could not be given back (${error instanceof Error ? error.name : "error"})`,
    );
    return 0;
  }
}
