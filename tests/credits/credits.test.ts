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
  releaseIdempotencyKey,
} from "@/lib/credits";
import { ApiError } from "@/lib/api/errors";
import { openInlineJob, type InlineJob } from "@/lib/jobs";
import type { ExtractedPage } from "@/lib/ocr/model";
import { getStore } from "@/lib/store";
import type { OutputFormat } from "@/lib/vocabulary";
import { testSettings } from "../support/env";
import { readPttl, withRedisStoreEnv } from "../support/redis";

const { prefix } = withRedisStoreEnv("credits");

const user = () => `usr_${randomBytes(6).toString("hex")}`;
const request = () => `req_${randomBytes(6).toString("hex")}`;

/**
 * A document of `pages` pages read in its request (lib/jobs/inline.ts): the one way pages are reserved and charged.
 * `finish(n)` delivers its first `n` pages (one credit each) and ends it; `fail()` ends it with everything refunded.
 */
async function readJob(
  userId: string,
  pages: number,
  requestId: string,
  { keyId, format = "text" }: { keyId?: string; format?: OutputFormat } = {},
): Promise<InlineJob & { deliver(n: number): Promise<number> }> {
  const selectedPages = Array.from({ length: pages }, (_, i) => i + 1);
  const job = await openInlineJob(getStore(), {
    document: { type: "pdf", pageCount: pages, selectedPages, language: { langs: ["eng"], auto: false } },
    bytes: new Uint8Array(0),
    inputSource: "base64",
    format,
    account: { userId, ...(keyId && { keyId }) },
    requestId,
    deadline: Date.now() + 60_000,
    settings: testSettings().jobs,
    name: "credits-test",
  });
  const page = (number: number) =>
    ({ number, text: `page ${number}`, confidence: 90, blocks: [] }) as unknown as ExtractedPage;
  return {
    ...job,
    // Null only for a job cancelled meanwhile (never here).
    deliver: async (n: number) =>
      (await job.finish(selectedPages.slice(0, n).map(page), { langs: ["eng"], auto: false })) ?? Number.NaN,
  };
}

/** The 402 a short balance answers, or the job. */
const refusal = (work: Promise<unknown>) =>
  work.then(
    () => null,
    (error: unknown) => error as ApiError,
  );

describe("credits", () => {
  it("a read reserves every page, is charged for the pages delivered and refunds the rest as a refund entry", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 10 });
    const requestId = request();
    const job = await readJob(userId, 5, requestId, { keyId: "key_a" });
    expect(job.balance).toBe(5);
    expect(await job.deliver(3)).toBe(7);
    // Ending it again (a retry of the bookkeeping) refunds nothing more, and charges nothing more.
    await job.deliver(5);
    await job.fail(new Error("late"));
    expect(await getBalance(getStore(), userId)).toBe(7);

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
        format: "text",
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
        format: "text",
        pages: 5,
      },
      { id: expect.stringMatching(/^led_/), at: expect.any(String), delta: 10, balanceAfter: 10, reason: "grant" },
    ]);
    expect(entries.reduce((sum, entry) => sum + entry.delta, 0)).toBe(await getBalance(getStore(), userId));
  });

  it("every page delivered writes no refund", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 3 });
    const job = await readJob(userId, 2, request());
    expect(await job.deliver(2)).toBe(1);
    expect((await listLedger(getStore(), userId)).entries).toHaveLength(2);
  });

  it("a failed read gives back its reservation, never more", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 4 });
    const job = await readJob(userId, 4, request());
    expect(await getBalance(getStore(), userId)).toBe(0);
    await job.fail(new Error("engine"));
    await job.fail(new Error("engine"));
    expect(await getBalance(getStore(), userId)).toBe(4);
    const { entries } = await listLedger(getStore(), userId);
    expect(entries.map((entry) => [entry.reason, entry.delta])).toEqual([
      ["refund", 4],
      ["ocr", -4],
      ["grant", 4],
    ]);
  });

  it("refuses to reserve more than the balance and charges nothing", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 2 });
    const refused = await refusal(readJob(userId, 3, request()));
    expect(refused).toMatchObject({ code: "insufficient_credits", headers: { "x-credits-remaining": "2" } });
    expect(await getBalance(getStore(), userId)).toBe(2);
    expect((await listLedger(getStore(), userId)).entries).toHaveLength(1);
  });

  it("race: 100 concurrent one-page reads on a balance of 10 → exactly 10 charged", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 10 });
    const results = await Promise.all(Array.from({ length: 100 }, () => refusal(readJob(userId, 1, request()))));
    expect(results.filter((result) => result === null)).toHaveLength(10);
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
    await (await readJob(userId, 3, settled, { keyId: "key_f", format: "json" })).deliver(2);
    const failed = request();
    await (await readJob(userId, 1, failed, { keyId: "key_f", format: "markdown" })).fail(new Error("engine"));
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
      await (await readJob(userId, 1, entry.requestId, { keyId: entry.keyId })).deliver(1);
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
    await (await readJob(userId, 6, request())).deliver(4);
    await readJob(userId, 3, request()); // still reading: its pages count
    const usage = await getDailyUsage(getStore(), userId);
    expect(usage).toHaveLength(30);
    expect(usage.at(-1)).toEqual({ day: new Date().toISOString().slice(0, 10), pages: 7 });
    expect(usage.slice(0, -1).every((day) => day.pages === 0)).toBe(true);
    expect(usage[0]?.day).toBe(new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10));
  });
});

async function reserveAndGrant(userId: string, keyId: string): Promise<void> {
  await grantCredits(getStore(), { userId, credits: 1 });
  await readJob(userId, 1, request(), { keyId });
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
