import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import * as jobsRoute from "@/app/api/ocr/jobs/route";
import { listLedger } from "@/lib/credits";
import { resetWorkQueue } from "@/lib/jobs";
import { getStore, resetStore } from "@/lib/store";
import { freePort } from "../../tooling";
import { createAccount, expectApiError, tinyPng } from "../api/support";
import { OwnRedis } from "../support/own-redis";
import { pushStoreEnv } from "../support/redis";

/*
 * Issue 39 point 16: a job submit answered 503 while Redis was full, yet left a queued job whose reservation waited
 * 24 h (the sweeper, at the job's deadline) for its refund. The job was created, the queue entry was refused (OOM),
 * and the job's end — which gives the credits back — was refused as well. Here a redis-server of the test's own is
 * made full right after the job is created (its `maxmemory` lowered under what it uses, as a full Redis is): the
 * submit is 503, the job has ended, and the credits are back at once.
 */

describe("a submit refused by a full Redis gives its reservation back at once (issue 39 point 16)", () => {
  let own: OwnRedis;
  let dir: string;
  let restoreEnv = () => {};

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "ocr-submit-full-"));
    own = new OwnRedis(await freePort(), dir, ["--maxmemory", "64mb", "--maxmemory-policy", "noeviction"]);
    await own.start();
    restoreEnv = pushStoreEnv({
      REDIS_URL: own.url,
      REDIS_PREFIX: "full:",
      JOBS_RUNNER: "off",
      LOG_REQUESTS: "false",
      RATE_LIMIT_PER_MINUTE: "100000",
    });
    await resetStore();
  });
  afterAll(async () => {
    await resetWorkQueue();
    await resetStore();
    restoreEnv();
    await own.kill();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it("Redis full between the job's creation and its queue entry: 503, the job failed, its credit refunded", async () => {
    const account = await createAccount(5);
    const client = createClient({ url: own.url, RESP: 2 });
    client.on("error", () => undefined);
    await client.connect();
    const store = getStore();
    const jobs = store.jobs;
    const createJob = jobs.createJob.bind(jobs);
    let created: string | undefined;
    // Redis becomes full the moment the job exists (a real OOM on the next write: the queue entry).
    jobs.createJob = async (job, input) => {
      const outcome = await createJob(job, input);
      created = job.id;
      const used = Number((await client.info("memory")).match(/^used_memory:(\d+)/m)![1]);
      await client.configSet("maxmemory", String(Math.floor(used / 2)));
      return outcome;
    };
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const warned = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    try {
      const response = await jobsRoute.POST(
        new Request("http://localhost:3000/api/ocr/jobs", {
          method: "POST",
          headers: { "x-api-key": account.key, "content-type": "image/png" },
          body: new Uint8Array(tinyPng("FULL", 300, 100)) as BodyInit,
        }),
      );
      await expectApiError(response, "unavailable", /nothing was charged/);
    } finally {
      jobs.createJob = createJob;
      logged.mockRestore();
      warned.mockRestore();
    }
    expect(created).toBeDefined();
    // Still full: the refund went through all the same.
    expect(
      await client.set("one-more", "x".repeat(1000)).then(
        () => "stored",
        (error: Error) => error.message,
      ),
    ).toMatch(/^OOM/);
    const record = await jobs.getJob(created!);
    expect(record).toMatchObject({ status: "failed", creditsReserved: 1, creditsUsed: 0, creditsRefunded: 1 });
    expect(await account.balance()).toBe(5);
    const { entries } = await listLedger(store, account.userId, { limit: 10 });
    expect(entries.map((entry) => entry.reason)).toEqual(expect.arrayContaining(["ocr", "refund"]));
    expect(await client.zCard("full:reservations:open").catch(() => 0)).toBe(0);
    await client.configSet("maxmemory", "64mb");
    client.destroy();
  });
});
