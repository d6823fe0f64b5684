import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_REDIS_URL, assertRedisReachable, createTestPrefix, deleteKeysWithPrefix } from "../support/redis";
import { startUpstashBridge, type UpstashBridge } from "../support/upstash-bridge";

// The bridge itself, with the client's non-default settings: no auto-pipelining (single commands go to `POST /`)
// and plain (not base64) results.
describe("msw bridge of Upstash's REST protocol", () => {
  const prefix = createTestPrefix("bridge");
  let bridge: UpstashBridge;

  beforeAll(async () => {
    await assertRedisReachable();
    bridge = startUpstashBridge({ redisUrl: TEST_REDIS_URL });
  });
  afterAll(async () => {
    await bridge.close();
    await deleteKeysWithPrefix(prefix);
  });

  it("serves single commands on / with plain results when the client disables base64", async () => {
    const redis = new Redis({
      url: bridge.url,
      token: bridge.token,
      responseEncoding: false,
      enableAutoPipelining: false,
      enableTelemetry: false,
    });
    expect(await redis.set(`${prefix}a`, "ünïcødé")).toBe("OK");
    expect(await redis.get(`${prefix}a`)).toBe("ünïcødé");
    expect(bridge.requests["/"]).toBeGreaterThanOrEqual(2);
    expect(bridge.base64Requests).toBe(0);
  });

  it("answers transactions on /multi-exec and pipelines on /pipeline, with per-command errors", async () => {
    const redis = new Redis({
      url: bridge.url,
      token: bridge.token,
      enableAutoPipelining: false,
      enableTelemetry: false,
    });
    const tx = redis.multi();
    tx.set(`${prefix}n`, "1");
    tx.incr(`${prefix}n`);
    expect(await tx.exec()).toEqual(["OK", 2]);
    const pipeline = redis.pipeline();
    pipeline.get(`${prefix}n`);
    pipeline.lpush(`${prefix}n`, "x"); // WRONGTYPE
    const results = await pipeline.exec({ keepErrors: true });
    expect(results[0]).toEqual({ result: 2, error: undefined });
    expect(results[1]?.error).toMatch(/WRONGTYPE/);
    expect(bridge.requests["/multi-exec"]).toBe(1);
    expect(bridge.requests["/pipeline"]).toBe(1);
  });

  it("rejects a wrong token", async () => {
    const redis = new Redis({ url: bridge.url, token: "wrong", enableTelemetry: false, retry: false });
    await expect(redis.get(`${prefix}a`)).rejects.toThrow(/Unauthorized/);
  });
});
