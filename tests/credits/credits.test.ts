import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  IDEMPOTENCY_TTL_MS,
  claimIdempotencyKey,
  completeIdempotencyKey,
  fingerprintRequest,
  getBalance,
  getDailyUsage,
  grantCredits,
  iterateLedger,
  listLedger,
  LEDGER_FILTER_SCAN_LIMIT,
  refundCredits,
  releaseIdempotencyKey,
  reserveCredits,
  settleCredits,
} from "@/lib/credits";
import { getEnv } from "@/lib/env";
import { getStore } from "@/lib/store";
import { readPttl, withRedisStoreEnv } from "../support/redis";

const { prefix } = withRedisStoreEnv("credits");

const user = () => `usr_${randomBytes(6).toString("hex")}`;
const request = () => `req_${randomBytes(6).toString("hex")}`;

describe("credits", () => {
  it("reserve → settle: charges the pages used and refunds the rest as a refund entry", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 10 });
    const requestId = request();
    expect(await reserveCredits(getStore(), { userId, pages: 5, requestId, keyId: "key_a", env: getEnv() })).toEqual({
      ok: true,
      balance: 5,
    });
    expect(await settleCredits(getStore(), { userId, requestId, keyId: "key_a", reserved: 5, used: 3 })).toEqual({
      refunded: 2,
      balance: 7,
    });
    // Settling again (a retry of the bookkeeping) refunds nothing more.
    expect(await settleCredits(getStore(), { userId, requestId, keyId: "key_a", reserved: 5, used: 3 })).toEqual({
      refunded: 0,
      balance: 7,
    });

    const { entries } = await listLedger(getStore(), userId);
    expect(entries).toEqual([
      {
        id: expect.stringMatching(/^led_/),
        at: expect.any(String),
        delta: 2,
        balanceAfter: 7,
        reason: "refund",
        requestId,
        keyId: "key_a",
        pages: 2,
      },
      {
        id: expect.stringMatching(/^led_/),
        at: expect.any(String),
        delta: -5,
        balanceAfter: 5,
        reason: "ocr",
        requestId,
        keyId: "key_a",
        pages: 5,
      },
      { id: expect.stringMatching(/^led_/), at: expect.any(String), delta: 10, balanceAfter: 10, reason: "grant" },
    ]);
    expect(entries.reduce((sum, entry) => sum + entry.delta, 0)).toBe(await getBalance(getStore(), userId));
  });

  it("settle with used = reserved writes nothing", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 3 });
    const requestId = request();
    await reserveCredits(getStore(), { userId, pages: 2, requestId, env: getEnv() });
    expect(await settleCredits(getStore(), { userId, requestId, reserved: 2, used: 2 })).toEqual({
      refunded: 0,
      balance: 1,
    });
    expect((await listLedger(getStore(), userId)).entries).toHaveLength(2);
  });

  it("refund gives back a failed request's reservation, never more", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 4 });
    const requestId = request();
    await reserveCredits(getStore(), { userId, pages: 4, requestId, env: getEnv() });
    expect(await refundCredits(getStore(), { userId, requestId, pages: 4 })).toEqual({ refunded: 4, balance: 4 });
    expect(await refundCredits(getStore(), { userId, requestId, pages: 4 })).toEqual({ refunded: 0, balance: 4 });
    expect(await refundCredits(getStore(), { userId, requestId: request(), pages: 100 })).toEqual({
      refunded: 0,
      balance: 4,
    });
  });

  it("refuses to reserve more than the balance and charges nothing", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 2 });
    expect(await reserveCredits(getStore(), { userId, pages: 3, requestId: request(), env: getEnv() })).toEqual({
      ok: false,
      balance: 2,
    });
    expect(await getBalance(getStore(), userId)).toBe(2);
    await expect(
      reserveCredits(getStore(), { userId, pages: 0, requestId: request(), env: getEnv() }),
    ).rejects.toThrow();
  });

  it("race: 100 concurrent one-page requests on a balance of 10 → exactly 10 charged", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 10 });
    const results = await Promise.all(
      Array.from({ length: 100 }, () =>
        reserveCredits(getStore(), { userId, pages: 1, requestId: request(), env: getEnv() }),
      ),
    );
    expect(results.filter((result) => result.ok)).toHaveLength(10);
    expect(await getBalance(getStore(), userId)).toBe(0);
    const { entries } = await listLedger(getStore(), userId, { limit: 100 });
    expect(entries.filter((entry) => entry.reason === "ocr")).toHaveLength(10);
    expect(entries.reduce((sum, entry) => sum + entry.delta, 0)).toBe(0);
  });

  it("pages the ledger newest first", async () => {
    const userId = user();
    for (let credits = 1; credits <= 5; credits++) await grantCredits(getStore(), { userId, credits });
    const first = await listLedger(getStore(), userId, { limit: 2 });
    expect(first.entries.map((entry) => entry.delta)).toEqual([5, 4]);
    const second = await listLedger(getStore(), userId, { limit: 2, cursor: first.nextCursor });
    expect(second.entries.map((entry) => entry.delta)).toEqual([3, 2]);
    const third = await listLedger(getStore(), userId, { limit: 2, cursor: second.nextCursor });
    expect(third).toEqual({ entries: [expect.objectContaining({ delta: 1 })], nextCursor: null });
    // A garbage cursor starts from the newest rather than failing.
    expect((await listLedger(getStore(), userId, { limit: 1, cursor: "nonsense" })).entries[0]?.delta).toBe(5);
  });

  it("records the request's format on its ocr entry and on its refunds", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 10 });
    const settled = request();
    await reserveCredits(getStore(), {
      userId,
      pages: 3,
      requestId: settled,
      keyId: "key_f",
      format: "json",
      env: getEnv(),
    });
    await settleCredits(getStore(), {
      userId,
      requestId: settled,
      keyId: "key_f",
      format: "json",
      reserved: 3,
      used: 2,
    });
    const failed = request();
    await reserveCredits(getStore(), {
      userId,
      pages: 1,
      requestId: failed,
      keyId: "key_f",
      format: "markdown",
      env: getEnv(),
    });
    await refundCredits(getStore(), { userId, requestId: failed, keyId: "key_f", format: "markdown", pages: 1 });
    const { entries } = await listLedger(getStore(), userId);
    expect(entries.map((entry) => [entry.reason, entry.requestId, entry.format])).toEqual([
      ["refund", failed, "markdown"],
      ["ocr", failed, "markdown"],
      ["refund", settled, "json"],
      ["ocr", settled, "json"],
      ["grant", undefined, undefined],
    ]);
  });

  it("filters the ledger by key, paging newest first with a cursor; iterates every entry", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 100 });
    // 12 requests, alternately with key_a and key_b, each one ocr entry; and a grant in the middle.
    const requests: Array<{ requestId: string; keyId: string }> = [];
    for (let i = 0; i < 12; i++) {
      const entry = { requestId: request(), keyId: i % 2 === 0 ? "key_a" : "key_b" };
      requests.push(entry);
      await reserveCredits(getStore(), { userId, pages: 1, ...entry, env: getEnv() });
      if (i === 5) await grantCredits(getStore(), { userId, credits: 1 });
    }
    const ofA = requests
      .filter((entry) => entry.keyId === "key_a")
      .map((entry) => entry.requestId)
      .reverse();
    const first = await listLedger(getStore(), userId, { limit: 4, keyId: "key_a" });
    expect(first.entries.map((entry) => entry.requestId)).toEqual(ofA.slice(0, 4));
    expect(first.nextCursor).toMatch(/^\d+$/);
    const second = await listLedger(getStore(), userId, { limit: 4, keyId: "key_a", cursor: first.nextCursor });
    expect(second.entries.map((entry) => entry.requestId)).toEqual(ofA.slice(4));
    expect(second.nextCursor).toBeNull();
    expect((await listLedger(getStore(), userId, { keyId: "key_none" })).entries).toEqual([]);

    const all: string[] = [];
    for await (const entry of iterateLedger(getStore(), userId)) all.push(entry.reason);
    expect(all).toHaveLength(14);
    const onlyB: string[] = [];
    for await (const entry of iterateLedger(getStore(), userId, { keyId: "key_b" })) onlyB.push(entry.requestId ?? "");
    expect(onlyB).toEqual(
      requests
        .filter((entry) => entry.keyId === "key_b")
        .map((entry) => entry.requestId)
        .reverse(),
    );
  });

  it(`a filtered page looks at no more than ${LEDGER_FILTER_SCAN_LIMIT} entries, then gives a cursor to go on`, async () => {
    const userId = user();
    const store = getStore();
    await reserveAndGrant(userId, "key_old");
    // Many entries of other keys (grants are cheap): the old key's entry is past the scan limit.
    for (let i = 0; i < LEDGER_FILTER_SCAN_LIMIT + 50; i++) {
      await store.credits.grantCredits({
        userId,
        credits: 1,
        entry: { id: `led_${i}`, at: new Date().toISOString(), reason: "grant", keyId: "key_new" },
      });
    }
    const page = await listLedger(getStore(), userId, { keyId: "key_old" });
    expect(page.entries).toEqual([]);
    expect(page.nextCursor).toMatch(/^\d+$/);
    const rest = await listLedger(getStore(), userId, { keyId: "key_old", cursor: page.nextCursor });
    expect(rest.entries.map((entry) => entry.keyId)).toEqual(["key_old"]);
    expect(rest.nextCursor).toBeNull();
  });

  it("reports pages used per day for the last 30 days, today last", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 20 });
    const a = request();
    await reserveCredits(getStore(), { userId, pages: 6, requestId: a, env: getEnv() });
    await settleCredits(getStore(), { userId, requestId: a, reserved: 6, used: 4 });
    await reserveCredits(getStore(), { userId, pages: 3, requestId: request(), env: getEnv() });
    const usage = await getDailyUsage(getStore(), userId);
    expect(usage).toHaveLength(30);
    expect(usage.at(-1)).toEqual({ day: new Date().toISOString().slice(0, 10), pages: 7 });
    expect(usage.slice(0, -1).every((day) => day.pages === 0)).toBe(true);
    expect(usage[0]?.day).toBe(new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10));
  });
});

async function reserveAndGrant(userId: string, keyId: string): Promise<void> {
  await grantCredits(getStore(), { userId, credits: 1 });
  await reserveCredits(getStore(), { userId, pages: 1, requestId: request(), keyId, env: getEnv() });
}

describe("idempotency keys", () => {
  const response = { status: 200, headers: { "content-type": "application/json" }, body: '{"success":true}' };

  it("first claim wins, a concurrent retry is in progress, a finished one replays", async () => {
    const userId = user();
    const fingerprint = fingerprintRequest(["POST", "/api/ocr/process", '{"image":"…"}']);
    const claims = await Promise.all(
      Array.from({ length: 5 }, () => claimIdempotencyKey(getStore(), { userId, key: "retry-1", fingerprint })),
    );
    const winners = claims.filter((claim) => claim.status === "claimed");
    expect(winners).toHaveLength(1);
    expect(claims.filter((claim) => claim.status === "in-progress")).toHaveLength(4);

    const winner = winners[0];
    if (winner?.status !== "claimed") throw new Error("no winner");
    expect(await completeIdempotencyKey(getStore(), { userId, key: "retry-1", token: winner.token, response })).toBe(
      true,
    );
    expect(await claimIdempotencyKey(getStore(), { userId, key: "retry-1", fingerprint })).toEqual({
      status: "replay",
      response,
    });
    // Another body under the same key is a mismatch; another account has its own keys.
    expect(
      await claimIdempotencyKey(getStore(), { userId, key: "retry-1", fingerprint: fingerprintRequest(["other"]) }),
    ).toEqual({
      status: "mismatch",
    });
    expect((await claimIdempotencyKey(getStore(), { userId: user(), key: "retry-1", fingerprint })).status).toBe(
      "claimed",
    );
  });

  it("keeps done records for 24 h", async () => {
    const userId = user();
    const claim = await claimIdempotencyKey(getStore(), { userId, key: "ttl", fingerprint: "f" });
    if (claim.status !== "claimed") throw new Error("not claimed");
    await completeIdempotencyKey(getStore(), { userId, key: "ttl", token: claim.token, response });
    const ttl = await readPttl(`${prefix}idem:${userId}:${createHash("sha256").update("ttl").digest("hex")}`);
    expect(ttl).toBeGreaterThan(IDEMPOTENCY_TTL_MS - 60_000);
  });

  it("a released claim lets the retry run again", async () => {
    const userId = user();
    const claim = await claimIdempotencyKey(getStore(), { userId, key: "fails", fingerprint: "f" });
    if (claim.status !== "claimed") throw new Error("not claimed");
    expect(await releaseIdempotencyKey(getStore(), { userId, key: "fails", token: claim.token })).toBe(true);
    expect((await claimIdempotencyKey(getStore(), { userId, key: "fails", fingerprint: "f" })).status).toBe("claimed");
  });

  it("rejects malformed keys", async () => {
    await expect(claimIdempotencyKey(getStore(), { userId: user(), key: "", fingerprint: "f" })).rejects.toMatchObject({
      code: "invalid_request",
    });
    await expect(
      claimIdempotencyKey(getStore(), { userId: user(), key: "a b", fingerprint: "f" }),
    ).rejects.toMatchObject({
      code: "invalid_request",
    });
  });

  it("fingerprints are length-delimited", () => {
    expect(fingerprintRequest(["ab", "c"])).not.toBe(fingerprintRequest(["a", "bc"]));
    expect(fingerprintRequest(["x", new Uint8Array([1, 2])])).toMatch(/^[0-9a-f]{64}$/);
  });
});
