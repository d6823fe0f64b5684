import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from "vitest";
import { services } from "@/lib/services";
import { getStore, resetStore } from "@/lib/store";
import { freePort } from "../../tooling";
import { OwnRedis, waitForStore } from "../support/own-redis";
import { createTestPrefix, pushStoreEnv } from "../support/redis";
import { callOcr, createAccount, expectApiError, expectOcrOk, tinyPng } from "./support";

/*
 * The Store on a redis-server of this test's own, stopped mid-run. Keys and credits fail closed: 503
 * `unavailable`, and no OCR is done that is not paid for. The server is stopped with SHUTDOWN SAVE and restarted
 * from its dump, as a managed Redis comes back with its data, so the same account works afterwards.
 */

const completedJobs = () => services().pool.stats().completed;

describe("Store outage on a redis-server of our own", () => {
  let redis: OwnRedis;
  let dir: string;
  let restoreEnv = () => {};
  const image = tinyPng("OUTAGE 3").toString("base64");
  let errors: MockInstance<typeof console.error>;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "ocr-outage-"));
    redis = new OwnRedis(await freePort(), dir);
    await redis.start();
    restoreEnv = pushStoreEnv({
      REDIS_URL: redis.url,
      REDIS_PREFIX: createTestPrefix("outage"),
      LOG_REQUESTS: "false",
    });
    await resetStore();
    // The store logs each failed operation; the failures are the point here.
    errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    vi.spyOn(console, "warn").mockImplementation(() => undefined);
  });

  afterAll(async () => {
    await resetStore();
    await redis.kill();
    await fs.rm(dir, { recursive: true, force: true });
    restoreEnv();
    vi.restoreAllMocks();
  });

  it("stopped mid-run: 503 unavailable without OCR; back with its data: requests succeed again", async () => {
    const account = await createAccount(10);
    await expectOcrOk(await callOcr({ image }, { key: account.key }));
    expect(await account.balance()).toBe(9);

    await redis.stop();
    const jobs = completedJobs();
    const response = await callOcr({ image }, { key: account.key });
    await expectApiError(response, "unavailable", /store is unavailable/);
    await expectApiError(
      await callOcr({ image }, { key: account.key, headers: { "idempotency-key": "during-outage" } }),
      "unavailable",
    );
    expect(completedJobs()).toBe(jobs);

    await redis.start();
    await waitForStore();
    expect(await account.balance()).toBe(9);
    await expectOcrOk(await callOcr({ image }, { key: account.key, headers: { "idempotency-key": "during-outage" } }));
    expect(await account.balance()).toBe(8);
  });

  it("stopped between the key check and the reservation: 503, and no OCR was done", async () => {
    const account = await createAccount(10);
    await expectOcrOk(await callOcr({ image }, { key: account.key }));
    const store = getStore().keys;
    const resolve = store.resolveApiKey.bind(store);
    const spy = vi.spyOn(store, "resolveApiKey").mockImplementationOnce(async (...args) => {
      const identity = await resolve(...args);
      await redis.stop();
      return identity;
    });
    try {
      const jobs = completedJobs();
      await expectApiError(await callOcr({ image }, { key: account.key }), "unavailable");
      expect(completedJobs()).toBe(jobs);
    } finally {
      spy.mockRestore();
      await redis.start();
      await waitForStore();
    }
    expect(await account.balance()).toBe(9);
  });

  it("stopped after the reservation: the OCR was paid for, the answer stands, settling is logged", async () => {
    const account = await createAccount(10);
    const store = getStore().jobs;
    const reserve = store.createJob.bind(store);
    const spy = vi.spyOn(store, "createJob").mockImplementationOnce(async (...args) => {
      const result = await reserve(...args);
      await redis.stop();
      return result;
    });
    try {
      const response = await callOcr({ image }, { key: account.key });
      expect((await expectOcrOk(response)).creditsUsed).toBe(1);
      expect(response.headers.get("x-credits-remaining")).toBe("9");
      expect(errors.mock.calls.flat().join(" ")).toMatch(/settling 1\/1 credits failed \(unavailable\)/);
    } finally {
      spy.mockRestore();
      await redis.start();
      await waitForStore();
    }
    expect(await account.balance()).toBe(9);
  });
});
