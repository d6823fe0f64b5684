import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createClient } from "redis";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { DELETE, GET, OPTIONS, POST } from "@/app/api/health/route";
import { pushEnv } from "./support/env";
import { errorBodySchema } from "@/lib/api/errors";
import { services } from "@/lib/services";
import { getAccountByEmail, signUp } from "@/lib/accounts";
import { getStore, resetStore } from "@/lib/store";
import { freePort } from "../tooling";
import { OwnRedis, waitForStore } from "./support/own-redis";
import packageJson from "@/package.json";
import { getEnv } from "@/lib/env";
import { assertRedisReachable, createTestPrefix, deleteKeysWithPrefix, TEST_REDIS_URL } from "./support/redis";

const storeSchema = z.strictObject({
  kind: z.enum(["memory", "redis-tcp", "redis-rest", "none"]),
  ok: z.boolean(),
  latencyMs: z.number().int().min(0),
  overdueReservations: z.number().int().min(0).optional(),
  error: z.string().optional(),
  dataLoss: z.strictObject({ detectedAt: z.iso.datetime(), message: z.string() }).optional(),
  memory: z
    .strictObject({ usedMb: z.number().min(0), maxMb: z.number().min(0).nullable(), policy: z.string().nullable() })
    .optional(),
  writeError: z.string().optional(),
});

const sampleSchema = z.strictObject({
  type: z.enum(["png", "pdf"]),
  ok: z.boolean(),
  text: z.string().optional(),
  source: z.enum(["ocr", "text-layer"]).optional(),
  confidence: z.number().min(0).max(100).optional(),
  latencyMs: z.number().int().min(0),
  overdueReservations: z.number().int().min(0).optional(),
  error: z.string().optional(),
});

const checkSchema = z.strictObject({
  ok: z.boolean(),
  latencyMs: z.number().int().min(0),
  checkedAt: z.iso.datetime(),
  cached: z.boolean(),
  samples: z.array(sampleSchema),
});

const healthSchema = z.strictObject({
  status: z.enum(["ok", "degraded"]),
  version: z.string(),
  store: storeSchema,
  engine: z.strictObject({
    ready: z.boolean(),
    workers: z.number().int().min(0),
    busy: z.number().int().min(0),
    queued: z.number().int().min(0),
    expectedWaitS: z.number().min(0),
    inspect: z.strictObject({
      workers: z.number().int().min(0),
      busy: z.number().int().min(0),
      queued: z.number().int().min(0),
    }),
    stopped: z.strictObject({
      timeout: z.number().int().min(0),
      work: z.number().int().min(0),
      memory: z.number().int().min(0),
      crashed: z.number().int().min(0),
    }),
    recycled: z.number().int().min(0),
    memoryMb: z.strictObject({ server: z.number().int().min(1), engine: z.array(z.number().int().min(0)) }),
    languages: z.array(z.string()),
    tesseract: z
      .strictObject({ kind: z.enum(["native", "wasm"]), version: z.string().optional(), note: z.string().optional() })
      .nullable(),
    recognizer: z.strictObject({ name: z.string(), note: z.string().optional() }).nullable(),
    check: checkSchema.optional(),
  }),
  eventLoop: z.strictObject({
    p50Ms: z.number().min(0),
    p99Ms: z.number().min(0),
    maxMs: z.number().min(0),
    windowMs: z.number().int().min(0),
  }),
});

const STORE_VARIABLES = [
  "UPSTASH_REDIS_REST_URL",
  "UPSTASH_REDIS_REST_TOKEN",
  "KV_REST_API_URL",
  "KV_REST_API_TOKEN",
  "REDIS_URL",
  "REDIS_PREFIX",
  "NODE_ENV",
] as const;
let restoreEnv = () => {};

/**
 * Point the process-wide store at a configuration (the variables not given are unset), as the server would see it:
 * installed over the run's variables (tests/support/env.ts), not written to `process.env`.
 */
async function useStoreEnv(values: Partial<Record<(typeof STORE_VARIABLES)[number], string>>): Promise<void> {
  restoreEnv();
  restoreEnv = pushEnv(Object.fromEntries(STORE_VARIABLES.map((name) => [name, values[name]])));
  await resetStore();
}

async function getHealth(query = ""): Promise<{ response: Response; body: z.infer<typeof healthSchema> }> {
  const response = await GET(new Request(`http://localhost/api/health${query}`));
  const body = healthSchema.parse(await response.json());
  return { response, body };
}

/** A local port that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeEach(() => useStoreEnv({ NODE_ENV: "test" }));
afterEach(async () => {
  await resetStore();
});
afterAll(async () => {
  restoreEnv();
  await services().pool.terminate();
});

describe("GET /api/health", () => {
  it("is ok on the embedded memory store, with CORS and a request id, without starting the engine", async () => {
    const { response, body } = await getHealth();
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("x-request-id")).toMatch(/^req_[\w-]+$/);
    expect(response.headers.get("access-control-expose-headers")).toContain("x-request-id");
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(body).toMatchObject({
      status: "ok",
      version: packageJson.version,
      store: { kind: "memory", ok: true },
      engine: { ready: false, workers: 0, busy: 0, queued: 0 },
    });
    expect(body.engine.languages).toContain("eng");
    expect(body.engine.check).toBeUndefined();
    expect(body.engine.tesseract).toBeNull();
    // PaddleOCR's recognizer is named from its files before any process starts (CI's OCR_MODEL_DIR: PP-OCRv6 tiny;
    // none: the npm package's PP-OCRv4).
    expect(body.engine.recognizer).toEqual({ name: process.env.OCR_MODEL_DIR ? "PP-OCRv6_tiny" : "PP-OCRv4" });
  });

  it("?deep=1 reads the built-in PNG (OCR) and PDF (text layer) through the engine, then serves the cached result", async () => {
    const first = await getHealth("?deep=1");
    expect(first.response.status).toBe(200);
    expect(first.body.status).toBe("ok");
    expect(first.body.engine.ready).toBe(true);
    expect(first.body.engine.workers).toBeGreaterThanOrEqual(1);
    expect(first.body.engine.check).toMatchObject({ ok: true, cached: false });
    const [png, pdf] = first.body.engine.check!.samples;
    expect(png).toMatchObject({ type: "png", ok: true, source: "ocr", text: "Health check OK" });
    expect(png!.confidence).toBeGreaterThan(60);
    expect(pdf).toMatchObject({ type: "pdf", ok: true, source: "text-layer", confidence: 100 });
    expect(pdf!.text).toMatch(/^Health check OK: this page is read from its text layer\.$/);

    const second = await getHealth("?deep=1");
    expect(second.body.engine.check).toMatchObject({ ok: true, cached: true });
    expect(second.body.engine.check?.checkedAt).toBe(first.body.engine.check?.checkedAt);

    // Once a worker is warm, the shallow check says so too, and which Tesseract it reads with (CI installs
    // libtesseract5, which OCR_TESSERACT=auto loads).
    const shallow = (await getHealth()).body;
    expect(shallow.engine.ready).toBe(true);
    expect(shallow.engine.tesseract?.kind).toEqual(
      process.env.CI ? "native" : expect.stringMatching(/^(native|wasm)$/),
    );
  });

  it("is ok on a real Redis (REDIS_URL)", async () => {
    await assertRedisReachable();
    const prefix = createTestPrefix("health");
    await useStoreEnv({ NODE_ENV: "test", REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix });
    const { response, body } = await getHealth();
    expect(response.status).toBe(200);
    expect(body.status).toBe("ok");
    expect(body.store).toMatchObject({ kind: "redis-tcp", ok: true });
    await resetStore();
    expect(await deleteKeysWithPrefix(prefix)).toBe(2); // the write probe (issue 30 point 3) and the store marker, nothing else
  });

  it("is 503 degraded, promptly, when Redis does not answer", { timeout: 60_000 }, async () => {
    await useStoreEnv({ NODE_ENV: "test", REDIS_URL: `redis://127.0.0.1:${await closedPort()}` });
    const { response, body } = await getHealth();
    expect(response.status).toBe(503);
    expect(response.headers.get("x-request-id")).toMatch(/^req_/);
    expect(body.status).toBe("degraded");
    expect(body.store).toMatchObject({ kind: "redis-tcp", ok: false });
    expect(body.store.error).toBeTruthy();
    expect(JSON.stringify(body)).not.toContain("127.0.0.1"); // no connection details in a public endpoint
  });

  it("is 503 degraded in production when no Redis is configured", async () => {
    await useStoreEnv({ NODE_ENV: "production" });
    const { response, body } = await getHealth();
    expect(response.status).toBe(503);
    expect(body.store).toMatchObject({ kind: "none", ok: false, error: "no store is configured" });
  });

  it("is 503 degraded, without echoing it, when the store configuration is invalid", async () => {
    await useStoreEnv({ NODE_ENV: "test", UPSTASH_REDIS_REST_URL: "https://secret-host.upstash.io" });
    const { response, body } = await getHealth();
    expect(response.status).toBe(503);
    expect(body.store).toMatchObject({ kind: "none", ok: false, error: "the store configuration is invalid" });
    expect(JSON.stringify(body)).not.toContain("secret-host");
  });
});

describe("a Redis that comes back empty", () => {
  let redis: OwnRedis;
  let dir: string;
  let prefix: string;

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "ocr-health-"));
    redis = new OwnRedis(await freePort(), dir);
    await redis.start();
    prefix = createTestPrefix("health-loss");
    await useStoreEnv({ NODE_ENV: "test", REDIS_URL: redis.url, REDIS_PREFIX: prefix });
  });
  afterEach(async () => {
    await resetStore();
    await redis.kill();
    await fs.rm(dir, { recursive: true, force: true });
  });

  async function readMarker(): Promise<Record<string, string>> {
    const client = createClient({ url: redis.url, RESP: 2 });
    await client.connect();
    try {
      return await client.hGetAll(`${prefix}meta:marker`);
    } finally {
      client.destroy();
    }
  }

  it(
    "is degraded, saying why, on this instance and on new ones, for 24 h; the store still answers (200)",
    { timeout: 30_000 },
    async () => {
      // A Redis the service has not used: a new deployment, ok; the marker is written.
      const fresh = await getHealth();
      expect(fresh.response.status).toBe(200);
      expect(fresh.body.status).toBe("ok");
      expect(fresh.body.store.dataLoss).toBeUndefined();
      const marker = await readMarker();
      expect(marker.initializedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(marker.dataLostAt).toBeUndefined();
      await signUp(
        getStore(),
        { email: "before-the-loss@example.com", password: "a long enough password", address: "192.0.2.1" },
        { env: getEnv() },
      );
      expect((await getHealth()).body.status).toBe("ok");

      // Restarted without persistence: everything is gone, the marker with it.
      const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
      await redis.kill();
      await redis.start();
      await waitForStore();
      expect(await getAccountByEmail(getStore(), "before-the-loss@example.com")).toBeNull();

      const lost = await getHealth();
      expect(lost.response.status).toBe(200);
      expect(lost.body.status).toBe("degraded");
      expect(lost.body.store).toMatchObject({ kind: "redis-tcp", ok: true });
      expect(lost.body.store.dataLoss?.message).toMatch(
        /^Redis lost its data \(no persistence, flushed, or evicting keys\?\): accounts, API keys and credits written before .* are gone/,
      );
      const detectedAt = lost.body.store.dataLoss!.detectedAt;
      expect(logged.mock.calls.some(([line]) => /Redis lost its data/.test(String(line)))).toBe(true);
      logged.mockRestore();

      // The marker is written again at once, yet the next check still says so, and so does a new instance.
      expect(await readMarker()).toMatchObject({ dataLostAt: detectedAt });
      expect((await getHealth()).body.store.dataLoss?.detectedAt).toBe(detectedAt);
      await resetStore(); // a new instance: it never saw the old marker
      const elsewhere = await getHealth();
      expect(elsewhere.body.status).toBe("degraded");
      expect(elsewhere.body.store.dataLoss?.detectedAt).toBe(detectedAt);

      // 24 h later it is history.
      const client = createClient({ url: redis.url, RESP: 2 });
      await client.connect();
      await client.hSet(
        `${prefix}meta:marker`,
        "dataLostAt",
        new Date(Date.now() - 24 * 3_600_000 - 60_000).toISOString(),
      );
      client.destroy();
      const later = await getHealth();
      expect(later.body.status).toBe("ok");
      expect(later.body.store.dataLoss).toBeUndefined();
    },
  );

  it("stays ok when Redis comes back with its data (persistence)", { timeout: 30_000 }, async () => {
    expect((await getHealth()).body.status).toBe("ok");
    const marker = await readMarker();
    await redis.stop(); // SHUTDOWN SAVE: back from its dump
    await redis.start();
    await waitForStore();
    const back = await getHealth();
    expect(back.body.status).toBe("ok");
    expect(back.body.store.dataLoss).toBeUndefined();
    expect(await readMarker()).toEqual(marker);
  });
});

describe("other methods", () => {
  it.each([
    ["POST", POST],
    ["DELETE", DELETE],
  ])("%s is 405 with Allow and the error body", async (method, handler) => {
    const response = await handler(new Request("http://localhost/api/health", { method }));
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, HEAD, OPTIONS");
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    const body = errorBodySchema.parse(await response.json());
    expect(body.error.code).toBe("method_not_allowed");
    expect(response.headers.get("x-request-id")).toBe(body.requestId);
  });

  it("OPTIONS answers the CORS preflight", async () => {
    const response = await OPTIONS(new Request("http://localhost/api/health", { method: "OPTIONS" }));
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("access-control-allow-methods")).toBe("GET, HEAD, OPTIONS");
    expect(response.headers.get("access-control-allow-headers")).toContain("x-api-key");
  });
});
