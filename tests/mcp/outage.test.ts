import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createMcpRoute } from "@/lib/mcp";
import { services } from "@/lib/services";
import { getStore, resetStore } from "@/lib/store";
import { createAccount, expectApiError, tinyPng } from "../api/support";
import { createTestPrefix, pushStoreEnv } from "../support/redis";
import { freePort } from "../../tooling";
import { OwnRedis, waitForStore } from "../support/own-redis";
import { MCP_ENDPOINT, expectToolError, jsonRpcResultSchema, readEvents, rpcRequest } from "./support";

/*
 * The Store (a redis-server of this file's own) stopped mid-run. Keys and credits fail closed, as on REST: HTTP 503
 * before anything is opened; a tool call whose reservation fails is a tool result `unavailable` (the model can tell
 * the user to retry) with no OCR done; an open SSE stream closes when its mailbox stays unreachable.
 */

describe("MCP during a Store outage", () => {
  let redis: OwnRedis;
  let dir: string;
  let restoreEnv = () => {};
  const route = createMcpRoute({ sse: { pingMs: 60_000, storeOutageMs: 300 } });
  const image = tinyPng("OUTAGE").toString("base64");

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "ocr-mcp-outage-"));
    redis = new OwnRedis(await freePort(), dir);
    await redis.start();
    restoreEnv = pushStoreEnv({
      REDIS_URL: redis.url,
      REDIS_PREFIX: createTestPrefix("mcp-outage"),
      LOG_REQUESTS: "false",
    });
    await resetStore();
    // The store logs each failed operation; the failures are the point here.
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    vi.spyOn(console, "warn").mockImplementation(() => undefined);
  });

  afterEach(async () => {
    if (!redis.running) await redis.start();
    await waitForStore();
  });

  afterAll(async () => {
    await resetStore();
    await redis.kill();
    await fs.rm(dir, { recursive: true, force: true });
    restoreEnv();
    vi.restoreAllMocks();
  });

  it("POST and GET → 503 unavailable, and no stream is opened", async () => {
    const account = await createAccount(5);
    await redis.stop();
    await expectApiError(
      await route.POST(rpcRequest({ jsonrpc: "2.0", id: 1, method: "ping" }, { key: account.key })),
      "unavailable",
    );
    const get = await route.GET(
      new Request(MCP_ENDPOINT, { headers: { accept: "text/event-stream", "x-api-key": account.key } }),
    );
    await expectApiError(get, "unavailable");
  });

  it("a tool call whose credits cannot be reserved → isError `unavailable`, no OCR done, nothing charged", async () => {
    const account = await createAccount(5);
    const store = getStore().keys;
    const resolve = store.resolveApiKey.bind(store);
    const spy = vi.spyOn(store, "resolveApiKey").mockImplementationOnce(async (...args) => {
      const identity = await resolve(...args);
      await redis.stop();
      return identity;
    });
    try {
      const jobs = services().pool.stats().completed;
      const body = {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "extract_text", arguments: { image_source: { type: "base64", data: image } } },
      };
      const response = await route.POST(rpcRequest(body, { key: account.key }));
      expect(response.status).toBe(200);
      expectToolError(jsonRpcResultSchema.parse(await response.json()).result, "unavailable");
      expect(services().pool.stats().completed).toBe(jobs);
    } finally {
      spy.mockRestore();
    }
    await redis.start();
    await waitForStore();
    expect(await account.balance()).toBe(5);
  });

  it("an open stream closes when its mailbox stays unreachable", async () => {
    const account = await createAccount(0);
    const response = await route.GET(
      new Request(MCP_ENDPOINT, { headers: { accept: "text/event-stream", "x-api-key": account.key } }),
    );
    const events = readEvents(response);
    expect((await events.next())!.event).toBe("endpoint");
    await redis.stop();
    // The store client gives up on a command after a few seconds; then the stream closes at once.
    expect(await events.next(10_000)).toBeNull();
  });
});
