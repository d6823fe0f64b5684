import { randomBytes } from "node:crypto";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as resultRoute from "@/app/api/ocr/jobs/[id]/result/route";
import { jobResultSchema } from "@/lib/api/schemas";
import { claimIdempotencyKey, completeIdempotencyKey } from "@/lib/credits";
import { getEnv } from "@/lib/env";
import { encodePage } from "@/lib/jobs/payload";
import { createMemoryStore, getStore } from "@/lib/store";
import { createAccount, withStore, type TestAccount } from "../api/support";
import { TEST_REDIS_URL } from "../support/redis";

/*
 * Issue 39 point 11: what an account makes the store keep counts against its byte cap (twice MAX_JOB_URL_BYTES), with
 * its job files. Kept result renderings — one per format and page subset a client asks for — used to be kept outside
 * it (60 reads of one job: 820 MB for 24 h, until Redis refused every tenant's writes). Now past the cap the account's
 * renderings that expire first are dropped (they can be made again), and a rendering that finds no room is answered
 * without being kept; stored Idempotency-Key answers count too (a long MCP answer's rest is its job's pages now). Real Redis throughout.
 */

/** The account's cap here: twice MAX_JOB_URL_BYTES. */
const MAX_JOB_URL_BYTES = 100_000;
const CAP = 2 * MAX_JOB_URL_BYTES;

withStore("redis", { MAX_JOB_URL_BYTES: String(MAX_JOB_URL_BYTES), RATE_LIMIT_PER_MINUTE: "100000" });

const BASE = "http://localhost:3000";
/** Characters of text on each page: a rendering of five pages is half the cap. */
const PAGE_CHARS = 20_000;

let client: ReturnType<typeof createClient>;
beforeAll(async () => {
  client = createClient({ url: TEST_REDIS_URL, RESP: 2 });
  client.on("error", () => undefined);
  await client.connect();
});
afterAll(() => {
  client.destroy();
});

/** Bytes Redis holds for a job's kept renderings (their chunks and records), and how many there are. */
async function renderingBytes(jobId: string): Promise<{ bytes: number; renderings: number }> {
  let bytes = 0;
  let renderings = 0;
  for await (const keys of client.scanIterator({ MATCH: `${getEnv().REDIS_PREFIX}job:${jobId}:render:*`, COUNT: 500 }))
    for (const key of keys) {
      bytes += await client.strLen(key);
      if (!/:\d+$/.test(key)) renderings++;
    }
  return { bytes, renderings };
}

/** What the account's kept-bytes set counts (members `…:{bytes}`). */
async function counted(userId: string): Promise<number> {
  const members = await client.zRange(`${getEnv().REDIS_PREFIX}job-files:${userId}`, 0, -1);
  return members.reduce((sum, member) => sum + Number(member.slice(member.lastIndexOf(":") + 1)), 0);
}

/** A job that read `pages` pages of long text and ended, made in the store as the runner leaves one (no engine). */
async function endedJob(account: TestAccount, pages: number): Promise<string> {
  const jobs = getStore().jobs;
  const jobId = `job_${randomBytes(16).toString("base64url")}`;
  const now = Date.now();
  const day = new Date(now).toISOString().slice(0, 10);
  const source = new Uint8Array(8);
  const put = await jobs.putSource(jobId, source, {
    chunkBytes: 1024 * 1024,
    pendingTtlMs: 600_000,
    userId: account.userId,
    maxAccountBytes: CAP,
  });
  expect(put.ok).toBe(true);
  const created = await jobs.createJob(
    {
      id: jobId,
      userId: account.userId,
      requestId: jobId,
      createdAt: now,
      deadline: now + 600_000,
      expiresAt: now + 1_200_000,
      fileType: "png",
      inputSource: "base64",
      bytes: source.byteLength,
      sourceChunks: put.ok ? put.chunks : 0,
      pageCount: pages,
      selection: `1-${pages}`,
      pagesTotal: pages,
      creditsReserved: pages,
      format: "text",
      language: "eng",
    },
    {
      entry: {
        id: `led_${randomBytes(8).toString("hex")}`,
        at: new Date(now).toISOString(),
        reason: "ocr",
        requestId: jobId,
      },
      day,
      maxQueuedPages: 1_000,
      ttlMs: 600_000,
    },
  );
  expect(created.ok).toBe(true);
  const stored = Array.from({ length: pages }, (_, index) => {
    const text = `PAGE ${index + 1} ${"x".repeat(PAGE_CHARS)}`;
    const word = { text, confidence: 95, bbox: [0.1, 0.1, 0.5, 0.15] as [number, number, number, number] };
    const page = {
      number: index + 1,
      width: 612,
      height: 792,
      source: "ocr" as const,
      rotation: 0 as const,
      skew: 0,
      confidence: 95,
      text,
      blocks: [{ ...word, lines: [{ ...word, words: [word] }] }],
      lineStyles: [],
    };
    return {
      page: index + 1,
      payload: encodePage({ page, language: { langs: ["eng"], auto: false }, readBy: "test", ms: 1 }),
    };
  });
  await jobs.storePages(jobId, stored, Date.now());
  await jobs.endJob(jobId, {
    end: "finish",
    now: Date.now(),
    resultTtlMs: 600_000,
    entry: {
      id: `led_${randomBytes(8).toString("hex")}`,
      at: new Date().toISOString(),
      reason: "refund",
      requestId: jobId,
    },
    day,
  });
  return jobId;
}

const read = (account: TestAccount, jobId: string, pages: string) =>
  resultRoute.GET(
    new Request(`${BASE}/api/ocr/jobs/${jobId}/result?pages=${pages}`, { headers: { "x-api-key": account.key } }),
  );

describe("kept renderings count against the account's cap (issue 39 point 11)", () => {
  it("20 page subsets of one job: what Redis keeps stays within the cap; every read is answered whole", async () => {
    const account = await createAccount(100);
    const jobId = await endedJob(account, 24);
    for (let first = 1; first <= 20; first++) {
      const response = await read(account, jobId, `${first}-${first + 4}`);
      expect(response.status).toBe(200);
      const part = jobResultSchema.parse(await response.json());
      expect(part).toMatchObject({ pages: `${first}-${first + 4}`, missingPages: [], next: null });
      expect(part.extractedText).toContain(`PAGE ${first + 4} x`);
    }
    const kept = await renderingBytes(jobId);
    // Each rendering is half the cap: one or two are kept, not twenty (2 MB).
    expect(kept.renderings).toBeGreaterThanOrEqual(1);
    expect(kept.bytes).toBeLessThanOrEqual(CAP);
    expect(await counted(account.userId)).toBeLessThanOrEqual(CAP);
    // The last one read is kept; the first was dropped for it, and is made again (the same answer) when asked.
    const again = jobResultSchema.parse(await (await read(account, jobId, "1-5")).json());
    expect(again).toMatchObject({ pages: "1-5", missingPages: [] });
    expect(again.extractedText).toContain("PAGE 1 x");
    expect((await renderingBytes(jobId)).bytes).toBeLessThanOrEqual(CAP);
  });

  it("another account's renderings are not dropped for this one's", async () => {
    const mine = await createAccount(100);
    const theirs = await createAccount(100);
    const theirJob = await endedJob(theirs, 5);
    expect((await read(theirs, theirJob, "1-5")).status).toBe(200);
    const theirKept = await renderingBytes(theirJob);
    expect(theirKept.renderings).toBe(1);
    const myJob = await endedJob(mine, 20);
    for (const pages of ["1-5", "6-10", "11-15", "16-20"]) expect((await read(mine, myJob, pages)).status).toBe(200);
    expect(await renderingBytes(theirJob)).toEqual(theirKept);
  });

  it("no room beside the account's files and kept answers: the rendering is answered, not kept", async () => {
    const account = await createAccount(100);
    const jobId = await endedJob(account, 5);
    // Kept answers fill all but a little of the cap (they are never dropped for a rendering).
    const filled = await getStore().jobs.keepBytes(account.userId, {
      name: "t:filler",
      bytes: CAP - 1_000,
      ttlMs: 600_000,
      maxAccountBytes: CAP,
    });
    expect(filled.ok).toBe(true);
    const part = jobResultSchema.parse(await (await read(account, jobId, "1-5")).json());
    expect(part).toMatchObject({ pages: "1-5", missingPages: [] });
    expect(await renderingBytes(jobId)).toEqual({ bytes: 0, renderings: 0 });
    expect(await counted(account.userId)).toBeLessThanOrEqual(CAP);
  });

  it("a job's file displaces the account's renderings rather than being refused", async () => {
    const account = await createAccount(100);
    const jobId = await endedJob(account, 9);
    expect((await read(account, jobId, "1-9")).status).toBe(200);
    expect((await renderingBytes(jobId)).renderings).toBe(1);
    const stored = await getStore().jobs.putSource(
      `job_${randomBytes(16).toString("base64url")}`,
      new Uint8Array(CAP - 100),
      {
        chunkBytes: 1024 * 1024,
        pendingTtlMs: 60_000,
        userId: account.userId,
        maxAccountBytes: CAP,
      },
    );
    expect(stored.ok).toBe(true);
    expect(await renderingBytes(jobId)).toEqual({ bytes: 0, renderings: 0 });
    expect(await counted(account.userId)).toBeLessThanOrEqual(CAP);
  });
});

describe("kept answers count against the account's cap (issue 39 point 11)", () => {
  it("an Idempotency-Key answer past the cap is kept as a short 410 saying so: a retry is not run again", async () => {
    const account = await createAccount(10);
    const store = getStore();
    const body = JSON.stringify({ success: true, extractedText: "z".repeat(120_000) });
    const complete = async (key: string) => {
      const claim = await claimIdempotencyKey(store, { userId: account.userId, key, fingerprint: "f" });
      if (claim.status !== "claimed") throw new Error(claim.status);
      await completeIdempotencyKey(store, {
        userId: account.userId,
        key,
        token: claim.token,
        response: { status: 200, headers: {}, body },
        maxAccountBytes: CAP,
      });
      return claimIdempotencyKey(store, { userId: account.userId, key, fingerprint: "f" });
    };
    expect(await complete("first")).toMatchObject({ status: "replay", response: { status: 200, body } });
    const second = await complete("second");
    expect(second).toMatchObject({ status: "replay", response: { status: 410 } });
    if (second.status !== "replay") throw new Error("no replay");
    expect(JSON.parse(second.response.body)).toMatchObject({ error: { code: "gone", message: /was not kept/ } });
    expect(await counted(account.userId)).toBeLessThanOrEqual(CAP);
  });
});

describe.each(["memory", "redis"] as const)("the %s store's count of what an account keeps", (kind) => {
  const jobStore = () => (kind === "memory" ? createMemoryStore() : getStore()).jobs;
  const bytes = (n: number) => new Uint8Array(n).fill(7);
  const input = (userId: string) => ({
    chunkBytes: 30_000,
    ttlMs: 600_000,
    info: "",
    userId,
    maxAccountBytes: 100_000,
  });

  it("renderings make room for each other, oldest-expiring first; files and kept answers are never dropped", async () => {
    const jobs = jobStore();
    const userId = `usr_${randomBytes(6).toString("hex")}`;
    const job = `job_${randomBytes(16).toString("base64url")}`;
    expect(await jobs.putRendering(job, "a", bytes(40_000), { ...input(userId), ttlMs: 300_000 })).toBe(true);
    expect(await jobs.putRendering(job, "b", bytes(40_000), input(userId))).toBe(true);
    // A third passes the cap: "a" (the one that goes first) is deleted for it, "b" stays.
    expect(await jobs.putRendering(job, "c", bytes(40_000), input(userId))).toBe(true);
    expect(await jobs.getRenderingInfo(job, "a")).toBeNull();
    expect(await jobs.getRenderingChunk(job, "a", 0)).toBeNull();
    expect(await jobs.getRenderingInfo(job, "b")).toMatchObject({ bytes: 40_000, chunks: 2 });
    expect(Buffer.from((await jobs.getRenderingChunk(job, "c", 1))!).equals(Buffer.from(bytes(10_000)))).toBe(true);
    // A kept answer takes the renderings' room; then a rendering finds none and is not kept.
    expect(
      await jobs.keepBytes(userId, { name: "t:x", bytes: 90_000, ttlMs: 600_000, maxAccountBytes: 100_000 }),
    ).toEqual({ ok: true });
    expect(await jobs.getRenderingInfo(job, "b")).toBeNull();
    expect(await jobs.getRenderingInfo(job, "c")).toBeNull();
    expect(await jobs.putRendering(job, "d", bytes(40_000), input(userId))).toBe(false);
    expect(await jobs.getRenderingInfo(job, "d")).toBeNull();
    // And a second kept answer past the cap is refused, saying what is kept.
    expect(
      await jobs.keepBytes(userId, { name: "t:y", bytes: 20_000, ttlMs: 600_000, maxAccountBytes: 100_000 }),
    ).toMatchObject({ ok: false, used: 90_000 });
  });
});
