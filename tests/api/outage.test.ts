import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from "vitest";
import { resetEnv } from "@/lib/env";
import { getOcrPool } from "@/lib/ocr";
import { getStore, resetStore } from "@/lib/store";
import { createTestPrefix } from "../support/redis";
import { callOcr, createAccount, expectApiError, expectOcrOk, sleep, tinyPng } from "./support";

/*
 * The Store on a redis-server of this test's own, stopped mid-run. Keys and credits fail closed: 503
 * `unavailable`, and no OCR is done that is not paid for. The server is stopped with SHUTDOWN SAVE and restarted
 * from its dump, as a managed Redis comes back with its data, so the same account works afterwards.
 */

const REDIS_SERVER = process.env.REDIS_SERVER_BIN ?? "redis-server";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

class OwnRedis {
  private child: ChildProcess | undefined;
  constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const child = spawn(
      REDIS_SERVER,
      ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", this.dir, "--dbfilename", "dump.rdb"],
      { stdio: "ignore" },
    );
    this.child = child;
    const failed = new Promise<never>((_, reject) => {
      child.once("error", (error) => reject(new Error(`could not start ${REDIS_SERVER}: ${error.message}`)));
      child.once("exit", (code) => reject(new Error(`${REDIS_SERVER} exited with ${code}`)));
    });
    failed.catch(() => undefined);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const ready = await Promise.race([this.ping(), failed]);
      if (ready) return;
      if (Date.now() > deadline) throw new Error(`redis-server on port ${this.port} did not start`);
      await sleep(50);
    }
  }

  /** SHUTDOWN SAVE: the server writes its data and exits. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    const client = createClient({ url: this.url, RESP: 2, socket: { reconnectStrategy: false } });
    client.on("error", () => undefined);
    await client.connect();
    await client.sendCommand(["SHUTDOWN", "SAVE"]).catch(() => undefined);
    client.destroy();
    await exited;
    this.child = undefined;
  }

  kill(): void {
    if (this.child?.exitCode === null) this.child.kill("SIGKILL");
    this.child = undefined;
  }

  private async ping(): Promise<boolean> {
    const client = createClient({ url: this.url, RESP: 2, socket: { connectTimeout: 500, reconnectStrategy: false } });
    client.on("error", () => undefined);
    try {
      await client.connect();
      return (await client.ping()) === "PONG";
    } catch {
      return false;
    } finally {
      if (client.isOpen) client.destroy();
    }
  }
}

/** Wait until the app's own store client has reconnected. */
async function waitForStore(): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await getStore().ping();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(100);
    }
  }
}

const completedJobs = () => getOcrPool().stats().completed;

describe("Store outage on a redis-server of our own", () => {
  let redis: OwnRedis;
  let dir: string;
  const saved = { ...process.env };
  const image = tinyPng("OUTAGE 3").toString("base64");
  let errors: MockInstance<typeof console.error>;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "ocr-outage-"));
    redis = new OwnRedis(await freePort(), dir);
    await redis.start();
    for (const name of ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN", "KV_REST_API_URL", "KV_REST_API_TOKEN"]) delete process.env[name];
    Object.assign(process.env, { REDIS_URL: redis.url, REDIS_PREFIX: createTestPrefix("outage"), LOG_REQUESTS: "false" });
    resetEnv();
    await resetStore();
    // The store logs each failed operation; the failures are the point here.
    errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    vi.spyOn(console, "warn").mockImplementation(() => undefined);
  });

  afterAll(async () => {
    await resetStore();
    redis.kill();
    await fs.rm(dir, { recursive: true, force: true });
    process.env = saved;
    resetEnv();
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
    await expectApiError(await callOcr({ image }, { key: account.key, headers: { "idempotency-key": "during-outage" } }), "unavailable");
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
    const store = getStore();
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
    const store = getStore();
    const reserve = store.reserveCredits.bind(store);
    const spy = vi.spyOn(store, "reserveCredits").mockImplementationOnce(async (...args) => {
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
