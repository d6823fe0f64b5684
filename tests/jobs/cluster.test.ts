import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalance, grantCredits, listLedger } from "@/lib/credits";
import { createApiKey } from "@/lib/keys";
import { getStore, resetStore } from "@/lib/store";
import { longScan } from "@/scripts/make-fixtures";
import { characterErrorRate } from "@/bench/metrics";
import { startInstance, type Instance } from "../support/instance";
import { freePort } from "../../tooling";
import { OwnRedis } from "../support/own-redis";
import { pushStoreEnv } from "../support/redis";

/*
 * Asynchronous jobs across processes, as deployed: two server instances (the route handlers and the job runner,
 * tests/support/instance-main.ts) and one `npm run worker` process, each with one engine process, on a Redis of the
 * test's own (it is paused and restarted here). A generated 120-page scan (two lines of known text per page) is the
 * document. The test's own store talks to the same Redis, to make accounts and read the ledger.
 */

const PAGES = 120;
/** The fault scenarios read half of it: long enough to be interrupted in the middle, shorter for CI. */
const FAULT_PAGES = 60;
const PREFIX = "ocr:test:cluster:";

interface JobStatus {
  jobId: string;
  status: string;
  pagesTotal: number;
  pagesDone: number;
  pagesFailed: number;
  creditsReserved: number;
  creditsUsed: number;
  creditsRefunded: number;
  failedPages?: Array<{ page: number; code: string }>;
  links: { self: string; result: string };
}

/** A process that dies lets its pages' locks lapse within seconds here (30 s by default: `jobSettings()`). */
const FAST_LOCKS = { jobs: { lockMs: 4000, stalledIntervalMs: 1000 } };

describe("jobs across two server instances and a worker", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "ocr-cluster-"));
  let redis: OwnRedis;
  let env: Record<string, string>;
  const instances: Instance[] = [];
  let a: Instance;
  let b: Instance;
  let scan: { pdf: Uint8Array; truth: string[] };
  let restoreEnv = () => {};

  beforeAll(async () => {
    redis = new OwnRedis(await freePort(), dir);
    await redis.start();
    env = {
      REDIS_URL: redis.url,
      REDIS_PREFIX: PREFIX,
      OCR_ENGINE_PROCESSES: "1",
      OCR_ENGINES: "tesseract",
      OCR_DEFAULT_LANGUAGE: "eng",
    };
    restoreEnv = pushStoreEnv({ ...env, LOG_REQUESTS: "false" });
    await resetStore();
    [scan, a, b] = await Promise.all([
      longScan(PAGES),
      startInstance("server", "instance-a", env, FAST_LOCKS),
      startInstance("server", "instance-b", env, FAST_LOCKS),
    ]);
    instances.push(a, b, await startInstance("worker", "worker-1", env, FAST_LOCKS));
  }, 240_000);

  afterAll(async () => {
    await Promise.allSettled(instances.map((instance) => instance.stop()));
    await resetStore();
    restoreEnv();
    await redis.kill();
    rmSync(dir, { recursive: true, force: true });
  }, 180_000);

  async function account(credits: number) {
    const userId = `usr_cluster${Math.random().toString(36).slice(2, 10)}`;
    await grantCredits(getStore(), { userId, credits });
    const { key } = await createApiKey(getStore(), { userId, name: "cluster" });
    return { userId, key, balance: () => getBalance(getStore(), userId) };
  }

  async function call(
    instance: Instance,
    method: string,
    route: string,
    key: string,
    body?: unknown,
  ): Promise<Response> {
    return fetch(`${instance.baseUrl}${route}`, {
      method,
      headers: { "x-api-key": key, ...(body !== undefined && { "content-type": "application/json" }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
  }

  async function submit(instance: Instance, key: string, pages = PAGES): Promise<JobStatus> {
    const response = await call(instance, "POST", "/api/ocr/jobs", key, {
      image: Buffer.from(scan.pdf).toString("base64"),
      ...(pages < PAGES && { options: { pages: `1-${pages}` } }),
    });
    expect(response.status).toBe(202);
    const view = (await response.json()) as JobStatus;
    expect(response.headers.get("location")).toBe(view.links.self);
    expect(view).toMatchObject({ status: "queued", pagesTotal: pages, creditsReserved: pages });
    return view;
  }

  async function status(instance: Instance, key: string, job: JobStatus): Promise<JobStatus> {
    const response = await call(instance, "GET", job.links.self, key);
    expect(response.status).toBe(200);
    return (await response.json()) as JobStatus;
  }

  /** Poll until `done` holds (every 500 ms; the test's own timeout bounds it). Reads have their own rate limit. */
  async function until(
    instance: Instance,
    key: string,
    job: JobStatus,
    done: (s: JobStatus) => boolean,
  ): Promise<JobStatus> {
    for (;;) {
      const current = await status(instance, key, job);
      if (done(current)) return current;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  const ended = (s: JobStatus) => !["queued", "running"].includes(s.status);

  /** The books of one job: what the account lost is exactly the pages delivered, and every entry names the job. */
  async function expectBalanced(
    user: { userId: string; balance(): Promise<number> },
    start: number,
    final: JobStatus,
  ): Promise<void> {
    expect(final.creditsUsed).toBe(final.pagesDone);
    expect(final.creditsUsed + final.creditsRefunded).toBe(final.creditsReserved);
    expect(await user.balance()).toBe(start - final.pagesDone);
    const { entries } = await listLedger(getStore(), user.userId, { limit: 100 });
    const jobEntries = entries.filter((entry) => entry.requestId === final.jobId);
    // The reservation, and at most one refund when it ended.
    expect(jobEntries.map((entry) => entry.reason).sort()).toEqual(
      final.creditsRefunded > 0 ? ["ocr", "refund"] : ["ocr"],
    );
    expect(jobEntries.reduce((sum, entry) => sum + entry.delta, 0)).toBe(-final.pagesDone);
  }

  it("a 120-page scan completes; its pages are read by several processes; the text is right", async () => {
    const user = await account(500);
    const job = await submit(a, user.key);
    const final = await until(b, user.key, job, ended);
    expect(final).toMatchObject({ status: "succeeded", pagesDone: PAGES, pagesFailed: 0 });
    await expectBalanced(user, 500, final);

    const json = await call(a, "GET", `${job.links.result}?format=json`, user.key);
    expect(json.status).toBe(200);
    const document = JSON.parse(((await json.json()) as { extractedText: string }).extractedText) as {
      pages: Array<{ number: number; readBy: string }>;
    };
    expect(document.pages.map((page) => page.number)).toEqual(Array.from({ length: PAGES }, (_, i) => i + 1));
    const readers = new Set(document.pages.map((page) => page.readBy));
    expect(readers.size).toBeGreaterThanOrEqual(2);
    for (const reader of readers) expect(["instance-a", "instance-b", "worker-1"]).toContain(reader);

    const text = (await (await call(b, "GET", job.links.result, user.key)).json()) as {
      extractedText: string;
      next: string | null;
    };
    expect(text.next).toBeNull();
    expect(characterErrorRate(text.extractedText.split("\f").join("\n"), scan.truth.join("\n"))).toBeLessThan(0.03);
  }, 600_000);

  it("a synchronous request to an instance that is reading a job's pages is answered", async () => {
    const user = await account(500);
    const job = await submit(a, user.key, FAULT_PAGES);
    await until(a, user.key, job, (s) => s.pagesDone >= 5);
    const response = await call(a, "POST", "/api/ocr/process", user.key, {
      image: Buffer.from(scan.pdf).toString("base64"),
      options: { pages: "7" },
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { extractedText: string; creditsUsed: number };
    expect(body.creditsUsed).toBe(1);
    expect(characterErrorRate(body.extractedText, scan.truth[6]!)).toBeLessThan(0.05);
    const final = await until(b, user.key, job, ended);
    expect(final.status).toBe("succeeded");
    await expectBalanced(user, 499, final);
  }, 600_000);

  it("cancel in the middle: the job says cancelled, unread pages are refunded, its waiting pages are dropped", async () => {
    const user = await account(500);
    const job = await submit(b, user.key, FAULT_PAGES);
    await until(b, user.key, job, (s) => s.pagesDone >= 10);
    const cancelled = await call(a, "DELETE", job.links.self, user.key);
    expect(cancelled.status).toBe(200);
    const view = (await cancelled.json()) as JobStatus;
    expect(view.status).toBe("cancelled");
    expect(view.creditsRefunded).toBe(FAULT_PAGES - view.pagesDone);
    await expectBalanced(user, 500, view);
    // Nothing it had not read by then is read or charged later: the job's record does not move any more.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const later = await status(b, user.key, job);
    expect(later).toMatchObject({ status: "cancelled", pagesDone: view.pagesDone, creditsUsed: view.creditsUsed });
    // A second cancel answers the job as it is.
    expect((await (await call(b, "DELETE", job.links.self, user.key)).json()) as JobStatus).toMatchObject({
      status: "cancelled",
    });
  }, 600_000);

  it("Redis paused for 5 s in the middle of a job: the job resumes and completes", async () => {
    const user = await account(500);
    const job = await submit(a, user.key, FAULT_PAGES);
    await until(a, user.key, job, (s) => s.pagesDone >= 10);
    redis.pause();
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    redis.resume();
    const final = await until(b, user.key, job, ended);
    expect(final).toMatchObject({ status: "succeeded", pagesDone: FAULT_PAGES });
    await expectBalanced(user, 500, final);
  }, 600_000);

  it("Redis restarted (with its data) in the middle of a job: the job resumes and completes", async () => {
    const user = await account(500);
    const job = await submit(b, user.key, FAULT_PAGES);
    await until(b, user.key, job, (s) => s.pagesDone >= 10);
    await redis.stop();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await redis.start();
    const final = await until(a, user.key, job, ended);
    expect(final).toMatchObject({ status: "succeeded", pagesDone: FAULT_PAGES });
    await expectBalanced(user, 500, final);
  }, 600_000);

  it("kill -9 of an instance in the middle of a job: the others finish it; no page is charged twice", async () => {
    const user = await account(500);
    const job = await submit(a, user.key, FAULT_PAGES);
    await until(b, user.key, job, (s) => s.pagesDone >= 15);
    await a.kill();
    const final = await until(b, user.key, job, ended);
    expect(final).toMatchObject({ status: "succeeded", pagesDone: FAULT_PAGES, pagesFailed: 0 });
    await expectBalanced(user, 500, final);
  }, 600_000);

  it("Redis comes back empty (no persistence): the job is gone, and its status says so — not a 500", async () => {
    const user = await account(500);
    const job = await submit(b, user.key, FAULT_PAGES);
    await until(b, user.key, job, (s) => s.pagesDone >= 5);
    await redis.kill();
    rmSync(path.join(dir, "dump.rdb"), { force: true });
    await redis.start();
    // The account and its key went with the data: the key no longer authenticates.
    const lost = await call(b, "GET", job.links.self, user.key);
    expect(lost.status).toBe(401);
    // A new account on the emptied store: another account's (unknown) job is a clear 404.
    const other = await account(10);
    const unknown = await call(b, "GET", job.links.self, other.key);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toMatch(/No job/);
    // The processes are still up and work again: a new job completes.
    const small = await call(b, "POST", "/api/ocr/jobs", other.key, {
      image: Buffer.from(scan.pdf).toString("base64"),
      options: { pages: "1-3" },
    });
    expect(small.status).toBe(202);
    const final = await until(b, other.key, (await small.json()) as JobStatus, ended);
    expect(final).toMatchObject({ status: "succeeded", pagesDone: 3 });
  }, 600_000);
});
