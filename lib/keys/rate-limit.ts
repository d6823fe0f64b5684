import { READ_RATE_LIMIT_FACTOR, type Env } from "@/lib/env";
import { ApiError } from "@/lib/api/errors";
import type { RateLimitResult, Store } from "@/lib/store";

export type { RateLimitResult } from "@/lib/store";

const MINUTE_MS = 60_000;

/** What the key limits depend on in the configuration. */
type KeyLimitsEnv = Pick<Env, "RATE_LIMIT_PER_MINUTE">;

/**
 * Whose bucket a credential's requests count against (`checkRateLimit`, `checkReadRateLimit`): an API key its own (its
 * id); the OAuth access tokens of all an account's connected apps one bucket together, `apps:{userId}` — an app is
 * registered by anyone at no cost, so a bucket per app would let one account multiply its limit by connecting apps
 * (issue 39: 55 apps, 3 300 requests a minute). docs/security.md#rate-limits.
 */
export function rateLimitSubject(identity: { userId: string; keyId: string; scopes?: readonly string[] }): string {
  return identity.scopes === undefined ? identity.keyId : `apps:${identity.userId}`;
}

/**
 * Count `weight` requests (default 1) against the key's limit: `env.RATE_LIMIT_PER_MINUTE` requests per fixed
 * one-minute window. An MCP batch counts each of its `tools/call`s. Never throws for a store outage: rate limits fail
 * open (logged), unlike credits.
 */
export async function checkRateLimit(
  store: Store,
  env: KeyLimitsEnv,
  keyId: string,
  weight = 1,
): Promise<RateLimitResult> {
  return store.limits.rateLimit({
    bucket: "api",
    identifier: keyId,
    limit: env.RATE_LIMIT_PER_MINUTE,
    windowMs: MINUTE_MS,
    weight,
  });
}

/** The key limits that are not variables (they were `READ_RATE_LIMIT_PER_MINUTE` and `KEY_FAILURES_PER_ADDRESS_PER_MINUTE`). */
export interface KeySettings {
  /** Reads about jobs per key per minute: ten times `RATE_LIMIT_PER_MINUTE` (600 by default). */
  readsPerMinute: number;
  /** Unknown or revoked keys one client address (IPv6: its /64) may send per minute. */
  keyFailuresPerAddressPerMinute: number;
}

/**
 * The key limits of the configuration `env`, with `overrides` on top (lib/settings.ts).
 */
export function keySettings(overrides: Partial<KeySettings> = {}, env: KeyLimitsEnv): KeySettings {
  return {
    readsPerMinute: READ_RATE_LIMIT_FACTOR * env.RATE_LIMIT_PER_MINUTE,
    keyFailuresPerAddressPerMinute: 30,
    ...overrides,
  };
}

/**
 * The limit of reads about jobs (status, result parts, the list): `keys.readsPerMinute` per key,
 * apart from `RATE_LIMIT_PER_MINUTE`, so polling a long job does not use up what the key may submit.
 */
export async function checkReadRateLimit(
  store: Store,
  keys: Pick<KeySettings, "readsPerMinute">,
  keyId: string,
  weight = 1,
): Promise<RateLimitResult> {
  return store.limits.rateLimit({
    bucket: "api-read",
    identifier: keyId,
    limit: keys.readsPerMinute,
    windowMs: MINUTE_MS,
    weight,
  });
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

/** The window of the failed-key-lookup limit (`keySettings(…).keyFailuresPerAddressPerMinute`). */
const KEY_FAILURE_WINDOW_MS = MINUTE_MS;

type FailureLimit = Pick<KeySettings, "keyFailuresPerAddressPerMinute">;
/** Most addresses remembered as blocked on one instance; past it the oldest is forgotten (the store still counts it). */
const MAX_BLOCKED_ADDRESSES = 10_000;

/**
 * Addresses over their failed-key-lookup limit on this instance → the end of their window (epoch ms). Kept in memory
 * so that a blocked address costs no store round trip at all — the cost the limit exists to cap.
 */
const blockedAddresses = new Map<string, number>();

/**
 * `429` for a client address (`addressLimitKey`) that sent too many unknown or revoked keys in its window, as this
 * instance has seen; nothing when it may go on. No store command: it is asked before every key lookup. `keys` is
 * only for the limit the answer names.
 */
export function refuseBlockedAddress(keys: FailureLimit, address: string, now = Date.now()): void {
  const until = blockedAddresses.get(address);
  if (until === undefined) return;
  if (until <= now) {
    blockedAddresses.delete(address);
    return;
  }
  throw keyFailuresError(keys, until, now);
}

/**
 * Count a lookup of an unknown or revoked key from `address` against `keys.keyFailuresPerAddressPerMinute`
 * (all instances share the count). Past it, throws `429` with `Retry-After`, and this instance refuses the address
 * before any lookup until its window ends. Fails open like every rate limit: a store outage counts nothing.
 */
export async function countKeyFailure(store: Store, keys: FailureLimit, address: string): Promise<void> {
  const limit = await store.limits.rateLimit({
    bucket: "key-failures",
    identifier: address,
    limit: keys.keyFailuresPerAddressPerMinute,
    windowMs: KEY_FAILURE_WINDOW_MS,
  });
  if (limit.success) return;
  if (blockedAddresses.size >= MAX_BLOCKED_ADDRESSES) blockedAddresses.delete(blockedAddresses.keys().next().value!);
  blockedAddresses.set(address, limit.reset);
  throw keyFailuresError(keys, limit.reset);
}

function keyFailuresError(keys: FailureLimit, until: number, now = Date.now()): ApiError {
  const seconds = Math.max(1, Math.ceil((until - now) / 1000));
  return new ApiError(
    "rate_limited",
    `Too many requests with unknown or revoked API keys from your address (${keys.keyFailuresPerAddressPerMinute} a minute). Retry in ${seconds} s, with a valid key.`,
    { headers: { "Retry-After": String(seconds) } },
  );
}
