import { randomBytes } from "node:crypto";
import { createClient } from "redis";
import { afterAll, beforeAll } from "vitest";
import { resetStore } from "@/lib/store";
import { pushEnv } from "./env";

/** The Redis the tests use: `REDIS_URL`, else a local one (CI starts redis-server when none answers). */
export const TEST_REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/** A key prefix of its own for each test run, e.g. `ocr:test:store:3f9a…:`. */
export function createTestPrefix(label: string): string {
  return `ocr:test:${label}:${randomBytes(6).toString("hex")}:`;
}

/** Fail with a clear message when the test Redis does not answer (rather than a wall of timeouts). */
export async function assertRedisReachable(url = TEST_REDIS_URL): Promise<void> {
  const client = createClient({ url, RESP: 2, socket: { connectTimeout: 2_000, reconnectStrategy: false } });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    throw new Error(
      `These tests need a real Redis at ${url} (set REDIS_URL, or start redis-server): ${
        error instanceof Error ? error.message : String(error)
      }`,
    );
  } finally {
    if (client.isOpen) client.destroy();
  }
}

/** Delete every key under `prefix` (the end of each test run). */
export async function deleteKeysWithPrefix(prefix: string, url = TEST_REDIS_URL): Promise<number> {
  if (!prefix.startsWith("ocr:test:")) throw new Error(`refusing to delete outside the test namespace: ${prefix}`);
  const client = createClient({ url, RESP: 2 });
  client.on("error", () => undefined);
  await client.connect();
  let deleted = 0;
  try {
    for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) {
      if (keys.length > 0) deleted += await client.unlink(keys);
    }
  } finally {
    client.destroy();
  }
  return deleted;
}

/** Keys currently under `prefix` (to check that nothing is left behind). */
export async function countKeysWithPrefix(prefix: string, url = TEST_REDIS_URL): Promise<number> {
  const client = createClient({ url, RESP: 2 });
  client.on("error", () => undefined);
  await client.connect();
  let count = 0;
  try {
    for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) count += keys.length;
  } finally {
    client.destroy();
  }
  return count;
}

/**
 * Milliseconds left on `key` (PTTL), read from the test Redis itself: the store's ports have no TTL getter. Null when
 * the key does not exist or never expires.
 */
export async function readPttl(key: string, url = TEST_REDIS_URL): Promise<number | null> {
  const client = createClient({ url, RESP: 2 });
  client.on("error", () => undefined);
  await client.connect();
  try {
    const ttl = await client.pTTL(key);
    return ttl < 0 ? null : ttl;
  } finally {
    client.destroy();
  }
}

/** The variables that choose the store (lib/store `resolveStoreConfig`). */
export const STORE_VARIABLES = [
  "REDIS_URL",
  "REDIS_PREFIX",
  "UPSTASH_REDIS_REST_URL",
  "UPSTASH_REDIS_REST_TOKEN",
  "KV_REST_API_URL",
  "KV_REST_API_TOKEN",
] as const;

/**
 * Put a store's variables into the test configuration (tests/support/env.ts) with every other store variable unset
 * (no Upstash from the run's environment), plus `extra`; returns the function that takes them off. The caller resets
 * the store (`resetStore()`) so the next `getStore()` builds it from them.
 */
export function pushStoreEnv(values: Record<string, string | undefined>): () => void {
  const unset = Object.fromEntries(STORE_VARIABLES.map((name) => [name, undefined]));
  return pushEnv({ ...unset, ...values });
}

/**
 * Point the store (`getStore()`) at the test Redis under a fresh prefix for the tests of one file, with `extraEnv`
 * in the configuration (installed, not written to `process.env`: tests/support/env.ts), and delete that prefix
 * afterwards.
 */
export function withRedisStoreEnv(label: string, extraEnv: Record<string, string> = {}): { prefix: string } {
  const prefix = createTestPrefix(label);
  let restore = () => {};
  beforeAll(async () => {
    await assertRedisReachable();
    restore = pushStoreEnv({ REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix, ...extraEnv });
    await resetStore();
  });
  afterAll(async () => {
    await resetStore();
    restore();
    await deleteKeysWithPrefix(prefix);
  });
  return { prefix };
}

/**
 * Rate limits use fixed windows aligned to the clock (@upstash/ratelimit's fixedWindow). A test that counts
 * requests within one window waits, when the current window ends within `neededMs`, for the next one to begin.
 */
/**
 * Run `attempt` so that all of it falls in one fixed window of `windowMs` (the limits count in windows aligned to
 * the epoch): when a window ended while it ran, run it once more (it cannot cross two boundaries of a long window).
 * For windows too long to wait out, where {@link waitForWindowRoom} could wait for most of an hour.
 */
export async function inOneWindow<T>(windowMs: number, attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    const window = Math.floor(Date.now() / windowMs);
    const result = await attempt();
    if (Math.floor(Date.now() / windowMs) === window || tries === 2) return result;
  }
}

export async function waitForWindowRoom(windowMs: number, neededMs: number): Promise<void> {
  const left = windowMs - (Date.now() % windowMs);
  if (left < neededMs) await new Promise((resolve) => setTimeout(resolve, left + 5));
}
