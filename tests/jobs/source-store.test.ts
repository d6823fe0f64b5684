import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createClient } from "redis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import * as jobsRoute from "@/app/api/ocr/jobs/route";
import { GET as health } from "@/app/api/health/route";
import { listLedger } from "@/lib/credits";
import { resetWorkQueue, type JobSettings } from "@/lib/jobs";
import { createRedisStore, createTcpRedis, getStore, resetStore, type Store } from "@/lib/store";
import { freePort } from "../../tooling";
import { createAccount, expectApiError, tinyPng, withStore } from "../api/support";
import { OwnRedis } from "../support/own-redis";
import { pushStoreEnv } from "../support/redis";

/*
 * Issue 30 point 3: a job's file is bounded and cleaned. Each account's stored job files are capped (`429`, nothing
 * charged); a store that fails part-way — a real Redis out of memory, a real `CLIENT PAUSE` — leaves no chunk behind
 * for long; `/api/health` says `degraded` when Redis is near its `maxmemory` and when it refuses writes. The failures
 * come from redis-server processes of the test's own, started with `--maxmemory`.
 */

const MiB = 1024 * 1024;
const CHUNK = 4 * MiB - 1024;

async function ownRedis(extraArgs: string[]): Promise<{ redis: OwnRedis; dir: string }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "ocr-source-store-"));
  const redis = new OwnRedis(await freePort(), dir, extraArgs);
  await redis.start();
  return { redis, dir };
}

async function rawClient(url: string) {
  const client = createClient({ url, RESP: 2 });
  client.on("error", () => undefined);
  await client.connect();
  return client;
}

describe("a job's file in Redis: written whole or not at all (issue 30 point 3)", () => {
  let own: { redis: OwnRedis; dir: string };
  let store: Store;
  let client: Awaited<ReturnType<typeof rawClient>>;
  /** Chunks the store wrote (counted around the real binary client). */
  let written = 0;
  let afterWrite: (() => Promise<void>) | undefined;

  beforeEach(async () => {
    // A 4 MiB chunk counts twice while it is written (the query buffer and the value): 16 MB takes two, not three.
    own = await ownRedis(["--maxmemory", "16mb", "--maxmemory-policy", "noeviction"]);
    client = await rawClient(own.redis.url);
    const { redis, binary, close } = createTcpRedis(own.redis.url, { commandTimeoutMs: 1_000 });
    written = 0;
    afterWrite = undefined;
    const counted = {
      ...binary,
      set: async (key: string, value: Uint8Array, ttlMs: number) => {
        await binary.set(key, value, ttlMs);
        written++;
        await afterWrite?.();
      },
    };
    store = createRedisStore({ redis, binary: counted, prefix: "t:", kind: "redis-tcp", onClose: close });
  });
  afterEach(async () => {
    await store.close();
    client.destroy();
    await own.redis.kill();
    await fs.rm(own.dir, { recursive: true, force: true });
  });

  const sourceKeys = () => client.keys("t:job:*:src:*");

  it("out of memory part-way (a 24 MiB file, 16 MB of maxmemory): the chunks written are deleted, the account's count with them; nothing charged", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const bytes = new Uint8Array(randomBytes(24 * MiB));
    const outcome = await store.jobs
      .putSource("job_oom", bytes, { chunkBytes: CHUNK, pendingTtlMs: 600_000, userId: "usr_a", maxAccountBytes: 1e9 })
      .then(
        () => "stored",
        (error: unknown) => error,
      );
    expect(logged.mock.calls.map((call) => String(call.join(" "))).join("\n")).toMatch(
      /putSource failed: OOM command not allowed/,
    );
    logged.mockRestore();
    expect(outcome).toMatchObject({ code: "unavailable" });
    expect(written).toBeGreaterThanOrEqual(1); // it failed part-way, with chunks already in Redis
    expect(await sourceKeys()).toEqual([]);
    expect(await client.zCard("t:job-files:usr_a")).toBe(0);
    // The next file of the account is counted from zero (and Redis takes small writes again).
    expect(
      await store.jobs.putSource("job_small", new Uint8Array(1000), {
        chunkBytes: CHUNK,
        pendingTtlMs: 60_000,
        userId: "usr_a",
        maxAccountBytes: 2000,
      }),
    ).toEqual({
      ok: true,
      chunks: 1,
    });
  });

  it(
    "CLIENT PAUSE WRITE after the first chunk: the write and its cleanup time out; what is left lives seconds, not 48 h",
    { timeout: 30_000 },
    async () => {
      const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
      const pendingTtlMs = 6_000;
      afterWrite = async () => {
        if (written === 1) await client.sendCommand(["CLIENT", "PAUSE", "3000", "WRITE"]);
      };
      const small = new Uint8Array(randomBytes(3 * 256 * 1024));
      const started = Date.now();
      const outcome = await store.jobs
        .putSource("job_paused", small, { chunkBytes: 256 * 1024, pendingTtlMs, userId: "usr_b", maxAccountBytes: 1e9 })
        .then(
          () => "stored",
          (error: unknown) => error,
        );
      logged.mockRestore();
      expect(outcome).toMatchObject({ code: "unavailable" });
      await client.sendCommand(["CLIENT", "UNPAUSE"]);
      // The cleanup could not run under the pause: the first chunk is there, with its short pending lifetime only.
      const left = await sourceKeys();
      for (const key of left)
        expect(await client.pTTL(key)).toBeLessThanOrEqual(pendingTtlMs - (Date.now() - started) + 50);
      const [, score] = await client
        .zRangeWithScores("t:job-files:usr_b", 0, 0)
        .then((items) => [items[0]?.value, items[0]?.score]);
      if (score !== undefined) expect(score).toBeLessThanOrEqual(started + pendingTtlMs + 50);
      // Gone at that lifetime (with a margin), asked for until then.
      await expect
        .poll(sourceKeys, { timeout: Math.max(0, started + pendingTtlMs + 1_000 - Date.now()), interval: 50 })
        .toEqual([]);
    },
  );
});

describe("/api/health and Redis's memory (issue 30 point 3)", () => {
  let own: { redis: OwnRedis; dir: string };
  let restoreEnv = () => {};

  beforeAll(async () => {
    own = await ownRedis(["--maxmemory", "8mb", "--maxmemory-policy", "noeviction"]);
    restoreEnv = pushStoreEnv({ REDIS_URL: own.redis.url, REDIS_PREFIX: "h:" });
    await resetStore();
  });
  afterAll(async () => {
    await resetStore();
    restoreEnv();
    await own.redis.kill();
    await fs.rm(own.dir, { recursive: true, force: true });
  });

  const read = async () => {
    const response = await health(new Request("http://localhost/api/health"));
    return {
      status: response.status,
      body: (await response.json()) as { status: string; store: Record<string, unknown> },
    };
  };

  it(
    "ok with room; degraded at 90 % of maxmemory; degraded saying so when Redis refuses writes",
    { timeout: 60_000 },
    async () => {
      const roomy = await read();
      expect(roomy.body.status).toBe("ok");
      expect(roomy.body.store).toMatchObject({ ok: true, memory: { maxMb: 8, policy: "noeviction" } });
      expect(roomy.body.store.writeError).toBeUndefined();

      const client = await rawClient(own.redis.url);
      const usedMb = async () => Number((await client.info("memory")).match(/^used_memory:(\d+)/m)![1]) / MiB;
      let i = 0;
      while ((await usedMb()) < 7.4) await client.set(`fill:${i++}`, Buffer.alloc(64 * 1024, 1));
      const near = await read();
      expect(near.status).toBe(200);
      expect(near.body.status).toBe("degraded");
      expect(near.body.store.writeError).toBeUndefined();
      expect((near.body.store.memory as { usedMb: number }).usedMb).toBeGreaterThanOrEqual(7.2);

      // Past maxmemory (lowered under what is used, as a full Redis is): every write is answered OOM.
      const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
      await client.configSet("maxmemory", "4mb");
      expect(
        await client.set("one-more", "x").then(
          () => "stored",
          (error: Error) => error.message,
        ),
      ).toMatch(/^OOM/);
      const full = await read();
      logged.mockRestore();
      expect(full.body.status).toBe("degraded");
      expect(full.body.store).toMatchObject({
        ok: true,
        writeError: "Redis refuses writes: out of memory (maxmemory)",
      });

      // Room again: ok.
      await client.configSet("maxmemory", "8mb");
      await client.del(Array.from({ length: i }, (_, k) => `fill:${k}`)); // not FLUSHALL: that would be a data loss
      client.destroy();
      expect((await read()).body.status).toBe("ok");
    },
  );
});

describe("each account's stored job files are capped (twice MAX_JOB_URL_BYTES)", () => {
  withStore("redis", { RATE_LIMIT_PER_MINUTE: "100000", JOBS_RUNNER: "off" });
  afterAll(() => resetWorkQueue());

  /** `POST /api/ocr/jobs` on a route instance with the jobs' settings `jobs`. */
  const submit = (key: string, png: Uint8Array, jobs: Partial<JobSettings>) =>
    jobsRoute.POST.with({ settings: { jobs } })(
      new Request("http://localhost:3000/api/ocr/jobs", {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "image/png" },
        body: png as BodyInit,
      }),
    );

  it("the job past the cap is 429 with when room comes back, nothing charged; another account is not affected", async () => {
    const png = new Uint8Array(tinyPng("CAPPED 1", 900, 300));
    // A cap of two and a half of these files (the constant is twice MAX_JOB_URL_BYTES).
    const cap = { maxAccountBytes: Math.floor(png.byteLength * 2.5) };
    const account = await createAccount(10);
    expect((await submit(account.key, png, cap)).status).toBe(202);
    expect((await submit(account.key, png, cap)).status).toBe(202);
    const refused = await submit(account.key, png, cap);
    const body = await expectApiError(
      refused,
      "rate_limited",
      /already hold .* of files .*twice MAX_JOB_URL_BYTES.*released at .*Nothing was charged/,
    );
    expect(body.error.message).toMatch(/would pass the/);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await account.balance()).toBe(8);
    const { entries } = await listLedger(getStore(), account.userId, { limit: 10 });
    expect(entries.filter((entry) => entry.reason === "ocr")).toHaveLength(2);
    const other = await createAccount(10);
    expect((await submit(other.key, png, cap)).status).toBe(202);
  });
});
