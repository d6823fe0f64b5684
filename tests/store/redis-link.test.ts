import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { isApiError } from "@/lib/api/errors";
import { createBullQueue } from "@/lib/jobs/queue/bullmq";
import { createRedisStore, createTcpRedis } from "@/lib/store";
import { freePort } from "../../tooling";
import { sleep } from "../api/support";
import { OwnRedis } from "../support/own-redis";
import { TEST_REDIS_URL, createTestPrefix, deleteKeysWithPrefix } from "../support/redis";

/*
 * Issue 29 point 7: `npm start` logged a Redis failure on every boot while Redis answered. The cause: the server opens
 * its Redis connections (the store's marker, the BullMQ queues of jobs and webhooks) in instrumentation, and right
 * after it Next.js loads every route's module synchronously — 2.5 s of CPU, 4–11 s on a busy machine. node-redis's
 * connect timer (2 s for the store, 5 s for BullMQ) and the requester's waits then came due while the loop was held,
 * and ran before the connect that had long completed was even seen. Here the loop is held the same way, with a busy
 * wait right after the connections were opened; and a Redis that is really down at start is said once.
 */

/** Every line the code under test logs, through any console method. */
function captureLog(): { lines: () => string[]; restore: () => void } {
  const lines: string[] = [];
  const spies = (["error", "warn", "info", "log", "debug"] as const).map((method) =>
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      lines.push(args.map((arg) => (arg instanceof Error ? (arg.stack ?? arg.message) : String(arg))).join(" "));
    }),
  );
  return { lines: () => lines, restore: () => spies.forEach((spy) => spy.mockRestore()) };
}

/** Hold the event loop the way Next.js's synchronous module loading does. */
function holdLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

/**
 * Hold the loop for `ms` once the first connection to `port` has been started, after the code that started it (and
 * whatever it started in the same turn: node-redis arms its connect timer there) has run: the connects are on the
 * wire, their completion not yet seen — where a server's start is when Next.js begins loading its routes.
 */
function holdAfterFirstConnect(port: number, ms: number): { held: Promise<void>; restore: () => void } {
  const original = net.Socket.prototype.connect;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let armed = true;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- net's overloads; arguments are passed through
  net.Socket.prototype.connect = function (this: net.Socket, ...args: any[]) {
    const first: unknown = Array.isArray(args[0]) ? args[0][0] : args[0];
    const target = typeof first === "object" && first !== null && "port" in first ? Number(first.port) : Number(first);
    const socket = Reflect.apply(original, this, args) as net.Socket;
    if (armed && target === port) {
      armed = false;
      process.nextTick(() => {
        holdLoop(ms);
        release();
      });
    }
    return socket;
  } as typeof original;
  return { held, restore: () => void (net.Socket.prototype.connect = original) };
}

/**
 * Run `start` in the loop's check phase (setImmediate), as a server's start runs outside the timers phase: a loop held
 * inside a timer callback finishes that phase with the time it read before, and the completed connects are seen
 * first — which would hide what this file is about.
 */
function inCheckPhase<T>(start: () => T): Promise<T> {
  return new Promise((resolve) => setImmediate(() => resolve(start())));
}

const redisPort = Number(new URL(TEST_REDIS_URL).port || 6379);
const bullSettings = {
  lockMs: 30_000,
  stalledIntervalMs: 30_000,
  maxStalls: 2,
  pageAttempts: 2,
  backoffMs: 1_000,
  blockSeconds: 1,
};

describe("a healthy Redis while the event loop is held at start (issue 29 point 7)", () => {
  const prefix = createTestPrefix("redis-link");
  let log: ReturnType<typeof captureLog> | undefined;
  afterEach(() => log?.restore());
  afterAll(() => deleteKeysWithPrefix(prefix));

  it("the store's first calls succeed and nothing is logged when the loop is held 3 s just after connecting", async () => {
    log = captureLog();
    const hold = holdAfterFirstConnect(redisPort, 3_000);
    const { redis, close } = createTcpRedis(TEST_REDIS_URL);
    const store = createRedisStore({ redis, prefix, kind: "redis-tcp", onClose: close });
    try {
      const { marker, ping } = await inCheckPhase(() => ({ marker: store.meta.readMarker(), ping: store.ping() }));
      await hold.held;
      await expect(ping).resolves.toBeUndefined();
      await expect(marker).resolves.toBeNull();
      await sleep(500);
      expect(log.lines()).toEqual([]);
    } finally {
      hold.restore();
      await store.close();
    }
  });

  it("BullMQ's queues and workers connect without a line when the loop is held 6 s (past node-redis's 5 s)", async () => {
    log = captureLog();
    const hold = holdAfterFirstConnect(redisPort, 6_000);
    const { queue, counts, taken } = await inCheckPhase(() => {
      const created = createBullQueue({ url: TEST_REDIS_URL, prefix: `${prefix}bull`, ...bullSettings });
      return { queue: created, counts: created.counts(), taken: created.take("page", { block: false }) };
    });
    try {
      await hold.held;
      await expect(counts).resolves.toEqual({ documents: { waiting: 0, active: 0 }, pages: { waiting: 0, active: 0 } });
      await expect(taken).resolves.toBeNull();
      await sleep(1_000);
      expect(log.lines()).toEqual([]);
    } finally {
      hold.restore();
      await queue.close();
    }
  });
});

describe("Redis down at start (issue 29 point 7)", () => {
  let redis: OwnRedis;
  let dir: string;
  let log: ReturnType<typeof captureLog> | undefined;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "ocr-link-"));
    redis = new OwnRedis(await freePort(), dir);
  });
  afterEach(() => log?.restore());
  afterAll(async () => {
    await redis.kill();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it("is said once, plainly; calls fail as unavailable meanwhile; the clients recover when Redis comes, said once", async () => {
    log = captureLog();
    const { redis: client, close } = createTcpRedis(redis.url);
    const store = createRedisStore({ redis: client, prefix: "ocr:test:down:", kind: "redis-tcp", onClose: close });
    const queue = createBullQueue({ url: redis.url, prefix: "ocr:test:down:bull", ...bullSettings });
    try {
      // What a server does at start: the marker, the queues' first commands; then requests keep coming.
      const marker = await store.meta.readMarker().catch((error: unknown) => error);
      expect(isApiError(marker) && marker.code).toBe("unavailable");
      const counts = queue.counts().catch(() => "failed");
      for (let i = 0; i < 4; i++) {
        expect(await store.ping().catch((error: unknown) => isApiError(error) && error.code)).toBe("unavailable");
      }
      await sleep(2_000);
      const down = log.lines();
      expect(down).toHaveLength(1);
      expect(down[0]).toBe(
        `[store] Redis at 127.0.0.1:${redis.port} is not reachable (ECONNREFUSED): requests that need it answer 503 ` +
          "unavailable, jobs and webhook deliveries wait; retrying until it answers",
      );

      await redis.start();
      await expect
        .poll(
          () =>
            store.ping().then(
              () => true,
              () => false,
            ),
          { timeout: 15_000 },
        )
        .toBe(true);
      await expect(counts).resolves.toEqual({ documents: { waiting: 0, active: 0 }, pages: { waiting: 0, active: 0 } });
      await expect(queue.take("page", { block: false })).resolves.toBeNull();
      await expect.poll(() => log!.lines().length, { timeout: 10_000 }).toBe(2);
      expect(log.lines()[1]).toMatch(
        new RegExp(
          `^\\[store\\] Redis at 127\\.0\\.0\\.1:${redis.port} answers again \\(it was unreachable for \\d+ s\\)$`,
        ),
      );
      await sleep(1_000);
      expect(log.lines()).toHaveLength(2);
    } finally {
      await queue.close();
      await store.close();
    }
  });
});
