import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { createClient } from "redis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  countOverdueReservations,
  grantCredits,
  listLedger,
  getBalance,
  sweepExpiredReservations,
} from "@/lib/credits";
import { ApiError } from "@/lib/api/errors";
import { services } from "@/lib/services";
import { processDocument } from "@/lib/intake";
import { getStore, installStore, resetStore, type JobStore, type Store } from "@/lib/store";
import { tinyPng } from "../api/support";
import { holdReadJob } from "../support/read-jobs";
import { TEST_REDIS_URL, withRedisStoreEnv } from "../support/redis";
import { getEnv } from "@/lib/env";
import { testSettings, processRuntime } from "../support/env";

/*
 * DESIGN's ledger always balances: credits are never lost, whatever happens between the service and Redis or to the
 * instance holding a reservation. A real Redis under this file's prefix; the engine is real where a request runs.
 */
const { prefix } = withRedisStoreEnv("reservations", { LOG_REQUESTS: "false" });
afterAll(() => services().pool.terminate());
afterEach(() => resetStore());

const user = () => `usr_${randomBytes(6).toString("hex")}`;
const request = () => `req_${randomBytes(6).toString("hex")}`;

async function expectBalanced(userId: string): Promise<void> {
  const { entries } = await listLedger(getStore(), userId, { limit: 100 });
  expect(entries.reduce((sum, entry) => sum + entry.delta, 0)).toBe(await getBalance(getStore(), userId));
}

/**
 * The real store, except that `jobs.createJob` (a read's one reservation) loses its reply after Redis ran it, and
 * optionally the reconciling `jobs.endJob` fails.
 */
function lossyJobStore(real: Store, { failEnd = false } = {}): Store & { lost: number } {
  const jobs: JobStore = Object.create(real.jobs) as JobStore;
  const wrapper: Store & { lost: number } = { ...real, jobs, lost: 0 };
  jobs.createJob = async (...args) => {
    await real.jobs.createJob(...args);
    wrapper.lost++;
    throw new ApiError("unavailable", "The account store did not answer in time");
  };
  jobs.endJob = async (...args) => {
    if (failEnd) throw new ApiError("unavailable", "The account store did not answer in time");
    return real.jobs.endJob(...args);
  };
  return wrapper;
}

describe("a reserve whose reply is lost", () => {
  it("is reconciled by its job: the request answers 503 unavailable and the balance is unchanged", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 5 });
    const store = lossyJobStore(getStore());
    installStore(store);
    const requestId = request();
    const outcome = await processDocument(getStore(), {
      ...processRuntime(),
      env: getEnv(),
      settings: testSettings(),
      body: { image: tinyPng("LOST 1").toString("base64") },
      account: { userId },
      requestId,
      deadline: Date.now() + 20_000,
    }).catch((error: unknown) => error);
    expect(outcome).toMatchObject({ code: "unavailable", status: 503 });
    expect(store.lost).toBe(1);
    expect(await getBalance(getStore(), userId)).toBe(5);
    const { entries } = await listLedger(getStore(), userId);
    expect(entries.slice(0, 2).map((entry) => [entry.reason, entry.delta, entry.requestId])).toEqual([
      ["refund", 1, requestId],
      ["ocr", -1, requestId],
    ]);
    await expectBalanced(userId);
  });

  it("when the reconciling end fails too, the sweep refunds it after the deadline", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 5 });
    const real = getStore();
    const store = lossyJobStore(real, { failEnd: true });
    installStore(store);
    const deadline = Date.now() + 300;
    const requestId = request();
    await expect(holdReadJob(getStore(), { userId, pages: 2, deadline, requestId })).rejects.toMatchObject({
      code: "unavailable",
    });
    expect(await getBalance(getStore(), userId)).toBe(3); // charged in Redis, reply lost, not yet reconciled

    // Not before its deadline (plus grace): its request might still end it.
    // (The sweep runs later, on another instance: its store answers.)
    expect((await sweepExpiredReservations(real, { now: deadline - 1, graceMs: 0 })).refunded).toBe(0);
    const result = await sweepExpiredReservations(real, { now: deadline + 1, graceMs: 0 });
    expect(result.refunded).toBeGreaterThanOrEqual(1);
    expect(await getBalance(getStore(), userId)).toBe(5);
    const { entries } = await listLedger(getStore(), userId);
    // Under the request's id, as its `ocr` entry: one read, one id in the ledger.
    expect(entries[0]).toMatchObject({ reason: "expired", delta: 2, requestId });
    await expectBalanced(userId);
  });
});

describe("the sweep", () => {
  it("refunds only overdue reservations, once each, even when instances sweep at the same time", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 30 });
    const past = Date.now() - 60_000;
    for (let i = 0; i < 10; i++) await holdReadJob(getStore(), { userId, pages: 1, deadline: past });
    await holdReadJob(getStore(), { userId, pages: 5, deadline: Date.now() + 60_000 });
    expect(await getBalance(getStore(), userId)).toBe(15);
    expect(await countOverdueReservations(getStore())).toBeGreaterThanOrEqual(10);

    const sweeps = await Promise.all([
      sweepExpiredReservations(getStore(), { graceMs: 0 }),
      sweepExpiredReservations(getStore(), { graceMs: 0 }),
    ]);
    expect(sweeps.reduce((sum, sweep) => sum + sweep.credits, 0)).toBeGreaterThanOrEqual(10);
    expect(await getBalance(getStore(), userId)).toBe(25); // the 10 refunded; the pending one untouched
    const { entries } = await listLedger(getStore(), userId, { limit: 100 });
    expect(entries.filter((entry) => entry.reason === "expired")).toHaveLength(10);
    expect(entries.every((entry) => entry.reason !== "expired" || entry.requestId?.startsWith("req_"))).toBe(true);
    await expectBalanced(userId);
  });

  it("ends a read's job whose process died: failed, refunded under its request, no longer waiting", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 10 });
    const requestId = request();
    const held = await holdReadJob(getStore(), { userId, pages: 3, deadline: Date.now() - 60_000, requestId });
    // The process dies here: neither `finish` nor `fail` runs.
    expect(await getBalance(getStore(), userId)).toBe(7);

    await sweepExpiredReservations(getStore(), { graceMs: 0 });
    expect(await getBalance(getStore(), userId)).toBe(10);
    const job = await getStore().jobs.getJob(held.id);
    // Not left `queued` in the account's job list (and its Cancel button on the settings page) until it expires.
    expect(job).toMatchObject({ status: "failed", pagesDone: 0, creditsUsed: 0, creditsRefunded: 3 });
    expect(JSON.parse(job!.error!)).toMatchObject({ code: "internal_error" });
    const { entries } = await listLedger(getStore(), userId, { limit: 10 });
    expect(entries.slice(0, 2).map((entry) => [entry.reason, entry.delta, entry.requestId])).toEqual([
      ["expired", 3, requestId],
      ["ocr", -3, requestId],
    ]);
    // The account's count of waiting pages (which caps its job submissions) is back to 0.
    const redis = createClient({ url: TEST_REDIS_URL });
    await redis.connect();
    try {
      expect(Number((await redis.get(`${prefix}jobs-queued:${userId}`)) ?? 0)).toBe(0);
    } finally {
      redis.destroy();
    }
    await expectBalanced(userId);
  });
});

describe("an instance killed with reservations open", () => {
  it("a second instance's sweep refunds them after their deadline; the ledger balances", async () => {
    const userId = user();
    await grantCredits(getStore(), { userId, credits: 10 });
    const deadline = Date.now() + 3_000;
    const script = path.join(import.meta.dirname, "hold-reservations.ts");
    // The server's condition: lib/store is "server-only" (see vitest.config.ts).
    const child = spawn(
      process.execPath,
      ["--conditions=react-server", "--import", "tsx", script, userId, "4", String(deadline)],
      {
        env: { ...process.env, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix, NODE_ENV: "test" },
        stdio: ["ignore", "pipe", "inherit"],
        cwd: path.resolve(import.meta.dirname, "../.."),
      },
    );
    // The child reserves 4 reads × 2 pages, says so, and then waits (its requests "in flight") until killed.
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("reserved")) resolve();
      });
      child.once("exit", (code) => reject(new Error(`the child exited (${code}) before reserving`)));
    });
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));
    expect(await getBalance(getStore(), userId)).toBe(2);

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now()) + 50));
    expect(await countOverdueReservations(getStore())).toBeGreaterThanOrEqual(4);
    const result = await sweepExpiredReservations(getStore(), { graceMs: 0 });
    expect(result.credits).toBeGreaterThanOrEqual(8);
    expect(await getBalance(getStore(), userId)).toBe(10);
    const { entries } = await listLedger(getStore(), userId, { limit: 100 });
    expect(entries.filter((entry) => entry.reason === "expired").map((entry) => entry.delta)).toEqual([2, 2, 2, 2]);
    await expectBalanced(userId);
    expect(await countOverdueReservations(getStore())).toBe(0);
  });
});
