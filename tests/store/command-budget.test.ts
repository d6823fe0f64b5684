import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withinScope } from "@/lib/request-scope";
import { createNodeRedisRequester } from "@/lib/store/node-redis-requester";
import { freePort } from "../../tooling";
import { OwnRedis } from "../support/own-redis";

/*
 * No Redis command outlives its request: inside a request's scope (lib/request-scope.ts), a command's timeout is cut
 * to the request's deadline plus its answer grace (1 s), instead of the client's 5 s. A redis-server of this file's
 * own, paused with SIGSTOP, stands for a Redis that has stopped answering.
 */
describe("Redis command timeouts follow the request deadline", () => {
  let redis: OwnRedis;
  let dir: string;
  const requester = () => createNodeRedisRequester(redis.url, { commandTimeoutMs: 5_000 });

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "ocr-budget-"));
    redis = new OwnRedis(await freePort(), dir);
    await redis.start();
  });
  afterAll(async () => {
    redis.resume();
    await redis.kill();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it("a command within a request 300 ms from its deadline fails after ~1.3 s, not 5 s", async () => {
    const client = requester();
    try {
      expect(await client.request({ body: ["PING"] })).toEqual({ result: "PONG" });
      redis.pause();
      const started = Date.now();
      const failure = await withinScope({ deadline: Date.now() + 300 }, () => client.request({ body: ["PING"] })).catch(
        (error: unknown) => error,
      );
      const elapsed = Date.now() - started;
      expect(failure).toBeInstanceOf(Error);
      // The timeout set is what is left of the deadline plus the 1 s grace — at most 1.3 s, less when a busy machine
      // took a while to send the command — never the client's 5 s.
      const timeoutMs = Number(/timed out after (\d+) ms/.exec((failure as Error).message)?.[1]);
      expect(timeoutMs).toBeGreaterThanOrEqual(250);
      expect(timeoutMs).toBeLessThanOrEqual(1_300);
      expect(elapsed).toBeGreaterThanOrEqual(timeoutMs - 5);
      expect(elapsed).toBeLessThan(5_000);
    } finally {
      redis.resume();
      await client.close();
    }
  });

  it("a deadline already past still leaves a refund its 250 ms", async () => {
    const client = requester();
    try {
      await client.request({ body: ["PING"] });
      redis.pause();
      const failure = await withinScope({ deadline: Date.now() - 10_000 }, () =>
        client.request({ body: ["PING"] }),
      ).catch((error: unknown) => error);
      expect((failure as Error).message).toMatch(/timed out after 250 ms/);
    } finally {
      redis.resume();
      await client.close();
    }
  });

  it("outside a request (CLI, sweeps) the client's own timeout applies", async () => {
    const client = createNodeRedisRequester(redis.url, { commandTimeoutMs: 600 });
    try {
      await client.request({ body: ["PING"] });
      redis.pause();
      const failure = await client.request({ body: ["PING"] }).catch((error: unknown) => error);
      expect((failure as Error).message).toMatch(/timed out after 600 ms/);
    } finally {
      redis.resume();
      await client.close();
    }
  });
});
