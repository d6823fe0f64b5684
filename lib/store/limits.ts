import { Ratelimit } from "@upstash/ratelimit";
import { ExpiringMap } from "./memory-support";
import { call, flatHash, integer, integerPair, type RedisContext } from "./redis-support";
import { recordBackoffFailureScript } from "./scripts";

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

/** Request rate limits (lib/keys, sign-in) and sign-in back-off (lib/accounts). */
export interface LimitStore {
  /** Count `weight` (default 1) hits against `identifier`'s fixed window of `limit` per `windowMs`; fails open. */
  rateLimit(input: { bucket: string; identifier: string; limit: number; windowMs: number; weight?: number }): Promise<RateLimitResult>;
  /** The back-off record of `subject`, or null when it has none. */
  getBackoff(subject: string): Promise<BackoffState | null>;
  /** Count one more failure of `subject` at `now` and return its new state (atomic: concurrent failures all count). */
  recordBackoffFailure(subject: string, now: number, policy: BackoffPolicy): Promise<BackoffState>;
  /** Forget `subject`'s failures (a success). */
  clearBackoff(subject: string): Promise<void>;
}

/** Limits on Redis: @upstash/ratelimit's fixed window, and a `backoff:{subject}` hash changed by a Lua script. */
export function createRedisLimitStore({ redis, key }: RedisContext): LimitStore {
  const recordFailure = redis.createScript<unknown>(recordBackoffFailureScript);
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
        return { success: result.success, limit: result.limit, remaining: result.remaining, reset: result.reset };
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
  };
}

/** Limits for one process, with the same algorithms as the redis adapter. */
export function createMemoryLimitStore(): LimitStore {
  const rateWindows = new ExpiringMap<number>();
  const backoffs = new ExpiringMap<BackoffState>();
  return {
    async rateLimit({ bucket, identifier, limit, windowMs, weight = 1 }) {
      // Same algorithm as @upstash/ratelimit's fixedWindow, which the redis adapter uses.
      const window = Math.floor(Date.now() / windowMs);
      const id = `${bucket}:${identifier}:${window}`;
      const count = (rateWindows.get(id) ?? 0) + weight;
      rateWindows.set(id, count, windowMs);
      return { success: count <= limit, limit, remaining: Math.max(0, limit - count), reset: (window + 1) * windowMs };
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
  };
}
