import { afterEach, describe, expect, it } from "vitest";
import { ApiError } from "@/lib/api/errors";
import { pushEnv } from "../support/env";
import {
  MISSING_STORE_MESSAGE,
  createRedisStore,
  createTcpRedis,
  getStore,
  resetStore,
  resolveStoreConfig,
} from "@/lib/store";

const base = {
  NODE_ENV: "development" as const,
  UPSTASH_REDIS_REST_URL: undefined,
  UPSTASH_REDIS_REST_TOKEN: undefined,
  KV_REST_API_URL: undefined,
  KV_REST_API_TOKEN: undefined,
  REDIS_URL: undefined,
  REDIS_PREFIX: "ocr:",
};

describe("resolveStoreConfig", () => {
  it("uses the memory store in development when no Redis is configured", () => {
    expect(resolveStoreConfig(base)).toEqual({ kind: "memory" });
  });

  it("refuses the memory store in production, naming the variables to set", () => {
    expect(() => resolveStoreConfig({ ...base, NODE_ENV: "production" })).toThrow(MISSING_STORE_MESSAGE);
    expect(MISSING_STORE_MESSAGE).toMatch(
      /UPSTASH_REDIS_REST_URL.*UPSTASH_REDIS_REST_TOKEN.*KV_REST_API_URL.*REDIS_URL/s,
    );
  });

  it("prefers Upstash REST, then Vercel KV variables, then REDIS_URL", () => {
    const all = {
      ...base,
      UPSTASH_REDIS_REST_URL: "https://a.upstash.io",
      UPSTASH_REDIS_REST_TOKEN: "ta",
      KV_REST_API_URL: "https://kv.upstash.io",
      KV_REST_API_TOKEN: "tkv",
      REDIS_URL: "redis://localhost:6379",
      REDIS_PREFIX: "p:",
    };
    expect(resolveStoreConfig(all)).toEqual({
      kind: "redis-rest",
      url: "https://a.upstash.io",
      token: "ta",
      prefix: "p:",
    });
    expect(
      resolveStoreConfig({ ...all, UPSTASH_REDIS_REST_URL: undefined, UPSTASH_REDIS_REST_TOKEN: undefined }),
    ).toEqual({
      kind: "redis-rest",
      url: "https://kv.upstash.io",
      token: "tkv",
      prefix: "p:",
    });
    expect(resolveStoreConfig({ ...base, NODE_ENV: "production", REDIS_URL: "rediss://h:1" })).toEqual({
      kind: "redis-tcp",
      url: "rediss://h:1",
      prefix: "ocr:",
    });
  });

  it("says which token is missing", () => {
    expect(() => resolveStoreConfig({ ...base, UPSTASH_REDIS_REST_URL: "https://a.upstash.io" })).toThrow(
      /UPSTASH_REDIS_REST_TOKEN/,
    );
  });
});

describe("getStore", () => {
  let restoreEnv = () => {};
  afterEach(async () => {
    restoreEnv();
    await resetStore();
  });

  it("keeps one store on globalThis, built on first use, until resetStore()", async () => {
    restoreEnv = pushEnv({ REDIS_URL: undefined, UPSTASH_REDIS_REST_URL: undefined, KV_REST_API_URL: undefined });
    const store = getStore();
    expect(store.kind).toBe("memory");
    expect(getStore()).toBe(store);
    await resetStore();
    expect(getStore()).not.toBe(store);
  });

  it("throws at first use in production without Redis", () => {
    restoreEnv = pushEnv({
      REDIS_URL: undefined,
      UPSTASH_REDIS_REST_URL: undefined,
      KV_REST_API_URL: undefined,
      NODE_ENV: "production",
    });
    expect(() => getStore()).toThrow(/No Redis is configured/);
  });
});

describe("when Redis cannot be reached", () => {
  // Nothing listens on port 1.
  const { redis, close } = createTcpRedis("redis://127.0.0.1:1", { connectWaitMs: 300 });
  const store = createRedisStore({ redis, prefix: "ocr:test:down:", kind: "redis-tcp", onClose: close });
  afterEach(async () => {
    await store.close();
  });

  it("credits and keys fail closed with `unavailable`", async () => {
    const reserve = store.credits.grantCredits({
      userId: "usr_x",
      credits: 1,
      entry: { id: "led_x", at: new Date().toISOString(), reason: "grant" },
    });
    await expect(reserve).rejects.toBeInstanceOf(ApiError);
    await expect(reserve).rejects.toMatchObject({ code: "unavailable", status: 503 });
    await expect(store.keys.resolveApiKey("0".repeat(64), new Date(), 60_000)).rejects.toMatchObject({
      code: "unavailable",
    });
    await expect(store.ping()).rejects.toMatchObject({ code: "unavailable" });
  });

  it("rate limits fail open", async () => {
    const result = await store.limits.rateLimit({ bucket: "api", identifier: "key_x", limit: 1, windowMs: 60_000 });
    expect(result).toMatchObject({ success: true, failedOpen: true });
  });
});
