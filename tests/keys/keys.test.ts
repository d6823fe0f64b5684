import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { getEnv } from "@/lib/env";
import {
  MAX_ACTIVE_KEYS,
  checkRateLimit,
  createApiKey,
  generateApiKey,
  hashApiKey,
  listActiveApiKeys,
  listApiKeys,
  rateLimitHeaders,
  resolveApiKey,
  revokeApiKey,
  revokeApiKeyByStart,
} from "@/lib/keys";
import { createClient } from "redis";
import { getStore } from "@/lib/store";
import { TEST_REDIS_URL, waitForWindowRoom, withRedisStoreEnv } from "../support/redis";

const { prefix } = withRedisStoreEnv("keys", { RATE_LIMIT_PER_MINUTE: "3" });
const user = () => `usr_${randomBytes(6).toString("hex")}`;

describe("API keys", () => {
  it("look like ocr_ + base58 of 32 random bytes", () => {
    const keys = new Set(Array.from({ length: 200 }, generateApiKey));
    expect(keys.size).toBe(200);
    for (const key of keys) expect(key).toMatch(/^ocr_[1-9A-HJ-NP-Za-km-z]{43,44}$/);
  });

  it("are created with a name, stored only as SHA-256 + a visible start, and resolve to their account", async () => {
    const userId = user();
    const { key, info } = await createApiKey(getStore(), { userId, name: "  CI pipeline " });
    expect(info).toEqual({
      id: expect.stringMatching(/^key_[\w-]{16}$/),
      name: "CI pipeline",
      start: key.slice(0, 12),
      createdAt: expect.any(String),
      lastUsedAt: null,
      revokedAt: null,
    });
    expect(Object.keys(info)).not.toContain("hash");

    // Nothing under our prefix holds the key itself; the index is the hash.
    const client = createClient({ url: TEST_REDIS_URL, RESP: 2 });
    await client.connect();
    try {
      const names = await client.keys(`${prefix}*`);
      expect(names).toContain(`${prefix}apikey:${hashApiKey(key)}`);
      for (const name of names) {
        const type = await client.type(name);
        const dump =
          type === "hash"
            ? JSON.stringify(await client.hGetAll(name))
            : type === "string"
              ? await client.get(name)
              : "";
        expect(dump ?? "").not.toContain(key);
        expect(name).not.toContain(key);
      }
    } finally {
      client.destroy();
    }

    expect(await resolveApiKey(getStore(), key)).toEqual({
      userId,
      keyId: info.id,
      name: "CI pipeline",
      start: info.start,
      lastUsedAt: null,
    });
    const listed = await listApiKeys(getStore(), userId);
    expect(listed).toEqual([{ ...info, lastUsedAt: expect.any(String) }]);
  });

  it("do not resolve when unknown, malformed, or revoked (at once)", async () => {
    const userId = user();
    const { key, info } = await createApiKey(getStore(), { userId, name: "temp" });
    expect(await resolveApiKey(getStore(), generateApiKey())).toBeNull();
    expect(await resolveApiKey(getStore(), "")).toBeNull();
    expect(await resolveApiKey(getStore(), `${key} `)).toBeNull();
    expect(await resolveApiKey(getStore(), "Bearer " + key)).toBeNull();

    expect(await revokeApiKey(getStore(), { userId: user(), keyId: info.id })).toBe(false); // not theirs
    expect(await resolveApiKey(getStore(), key)).not.toBeNull();
    expect(await revokeApiKey(getStore(), { userId, keyId: info.id })).toBe(true);
    expect(await resolveApiKey(getStore(), key)).toBeNull();
    // Still listed, revoked, with its last use; no longer active.
    expect(await listApiKeys(getStore(), userId)).toEqual([
      { ...info, lastUsedAt: expect.any(String), revokedAt: expect.any(String) },
    ]);
    expect(await listActiveApiKeys(getStore(), userId)).toEqual([]);
    expect(await revokeApiKey(getStore(), { userId, keyId: info.id })).toBe(false);
    expect(await resolveApiKey(getStore(), key)).toBeNull();
  });

  it("are revoked by their visible start (the admin CLI)", async () => {
    const userId = user();
    const { key, info } = await createApiKey(getStore(), { userId, name: "cli" });
    await expect(revokeApiKeyByStart(getStore(), { userId, start: "ocr_nope" })).rejects.toMatchObject({
      code: "not_found",
    });
    expect(await revokeApiKeyByStart(getStore(), { userId, start: info.start })).toEqual(info);
    expect(await resolveApiKey(getStore(), key)).toBeNull();
    // A revoked key is not found again by its start.
    await expect(revokeApiKeyByStart(getStore(), { userId, start: info.start })).rejects.toMatchObject({
      code: "not_found",
    });
  });

  it.each([[""], ["   "], ["x".repeat(65)]])("refuse a bad name %#", async (name) => {
    await expect(createApiKey(getStore(), { userId: user(), name })).rejects.toMatchObject({ code: "invalid_request" });
  });

  it(`are limited to ${MAX_ACTIVE_KEYS} active keys per account`, async () => {
    const userId = user();
    const created = await Promise.all(
      Array.from({ length: MAX_ACTIVE_KEYS }, (_, i) => createApiKey(getStore(), { userId, name: `k${i}` })),
    );
    await expect(createApiKey(getStore(), { userId, name: "one too many" })).rejects.toMatchObject({
      code: "conflict",
      message: expect.stringContaining("50 active API keys"),
    });
    expect(await listApiKeys(getStore(), userId)).toHaveLength(MAX_ACTIVE_KEYS);
    await revokeApiKey(getStore(), { userId, keyId: created[0]?.info.id ?? "" });
    await expect(createApiKey(getStore(), { userId, name: "fits again" })).resolves.toMatchObject({
      info: { name: "fits again" },
    });
    // The revoked key is still listed but does not count.
    expect(await listApiKeys(getStore(), userId)).toHaveLength(MAX_ACTIVE_KEYS + 1);
    await expect(createApiKey(getStore(), { userId, name: "one too many again" })).rejects.toMatchObject({
      code: "conflict",
    });
  });

  it("list the active keys newest first, then the revoked ones, most recently revoked first", async () => {
    const userId = user();
    const tick = () => new Promise((resolve) => setTimeout(resolve, 5));
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push((await createApiKey(getStore(), { userId, name: `k${i}` })).info.id);
      await tick();
    }
    await revokeApiKey(getStore(), { userId, keyId: ids[2] ?? "" });
    await tick();
    await revokeApiKey(getStore(), { userId, keyId: ids[0] ?? "" });
    expect((await listApiKeys(getStore(), userId)).map((key) => key.id)).toEqual([ids[3], ids[1], ids[0], ids[2]]);
    expect((await listActiveApiKeys(getStore(), userId)).map((key) => key.id)).toEqual([ids[3], ids[1]]);
  });
});

describe("rate limit per key", () => {
  it("allows RATE_LIMIT_PER_MINUTE requests and rejects the next with Retry-After", async () => {
    const keyId = `key_${randomBytes(6).toString("hex")}`;
    await waitForWindowRoom(60_000, 5_000);
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await checkRateLimit(getStore(), getEnv(), keyId));
    expect(results.map((result) => result.success)).toEqual([true, true, true, false]);
    const [allowed, , , rejected] = results;
    if (!allowed || !rejected) throw new Error("missing results");
    const now = Date.now();
    const headers = rateLimitHeaders(rejected, now);
    expect(headers).toMatchObject({ "RateLimit-Limit": "3", "RateLimit-Remaining": "0" });
    expect(Number(headers["Retry-After"])).toBeGreaterThanOrEqual(1);
    expect(Number(headers["Retry-After"])).toBeLessThanOrEqual(60);
    expect(rateLimitHeaders(allowed, now)).not.toHaveProperty("Retry-After");
  });
});
