import { getEnv } from "@/lib/env";
import { getStore, type RateLimitResult } from "@/lib/store";

const MINUTE_MS = 60_000;

/**
 * Count `weight` requests (default 1) against the key's limit: `RATE_LIMIT_PER_MINUTE` requests per fixed one-minute
 * window. An MCP batch counts each of its `tools/call`s. Never throws for a store outage: rate limits fail open
 * (logged), unlike credits.
 */
export async function checkRateLimit(keyId: string, weight = 1): Promise<RateLimitResult> {
  return getStore().limits.rateLimit({ bucket: "api", identifier: keyId, limit: getEnv().RATE_LIMIT_PER_MINUTE, windowMs: MINUTE_MS, weight });
}

/**
 * `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds until the window ends, IETF draft style)
 * for every response, plus `Retry-After` when the request was rejected.
 */
export function rateLimitHeaders(result: RateLimitResult, now = Date.now()): Record<string, string> {
  const resetSeconds = String(Math.max(0, Math.ceil((result.reset - now) / 1000)));
  const headers: Record<string, string> = {
    "RateLimit-Limit": String(result.limit),
    "RateLimit-Remaining": String(result.remaining),
    "RateLimit-Reset": resetSeconds,
  };
  if (!result.success) headers["Retry-After"] = resetSeconds === "0" ? "1" : resetSeconds;
  return headers;
}
