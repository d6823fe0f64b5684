import { delay, http, HttpResponse } from "msw";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { getEnv } from "@/lib/env";
import { listLedger } from "@/lib/credits";
import { createMcpRoute, type McpRoute, type SseTiming } from "@/lib/mcp";
import { getStore } from "@/lib/store";
import {
  REQUEST_ID,
  callOcr,
  createAccount,
  expectApiError,
  expectLedgerConsistent,
  fixtureArrayBuffer,
  setEnv,
  sleep,
  tinyPng,
  withRemoteFiles,
  withStore,
} from "../api/support";
import { countKeysWithPrefix, waitForWindowRoom } from "../support/redis";
import {
  MCP_ENDPOINT,
  connectClient,
  eventually,
  expectExtracted,
  expectToolError,
  jsonRpcErrorSchema,
  jsonRpcResultSchema,
  messageOf,
  readEvents,
  rpcRequest,
  type McpClient,
  type WireLog,
} from "./support";

/*
 * The legacy HTTP+SSE transport (protocol 2024-11-05): raw frames first, then the official SSE clients across two
 * handler instances that share only the Store (a real Redis), as two serverless instances would.
 */

const server = withRemoteFiles();

const png = tinyPng("HELLO 42").toString("base64");
const SESSION_ENDPOINT = /^\/api\/mcp\?sessionId=[A-Za-z0-9_-]{22}\.[0-9a-z]+$/;

function route(sse: Partial<SseTiming> = {}): McpRoute {
  return createMcpRoute({ sse: { pingMs: 60_000, ...sse } });
}

async function openStream(handlers: McpRoute, key: string) {
  const response = await handlers.GET(
    new Request(MCP_ENDPOINT, { headers: { accept: "text/event-stream", "x-api-key": key } }),
  );
  expect(response.status).toBe(200);
  const events = readEvents(response);
  const first = await events.next();
  expect(first).toMatchObject({ event: "endpoint", retry: 500 });
  expect(first!.data).toMatch(SESSION_ENDPOINT);
  const query = new URL(first!.data!, MCP_ENDPOINT).search;
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    handlers.POST(rpcRequest(body, { key, query, headers }));
  return { response, events, query, post };
}

async function expect202(response: Response): Promise<void> {
  expect(response.status, await response.clone().text()).toBe(202);
  expect(await response.text()).toBe("");
  expect(response.headers.get("content-type")).toBeNull();
  expect(response.headers.get("x-request-id")).toMatch(REQUEST_ID);
}

const initialize = (version: string) => ({
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});
const callTool = (args: unknown, id: number) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "extract_text", arguments: args },
});

describe("legacy HTTP+SSE, raw (redis store)", () => {
  withStore("redis");

  it("GET opens the stream: `endpoint` first; each POST → 202 and its response as `event: message`", async () => {
    const account = await createAccount(3);
    const handlers = route();
    const { response, events, post } = await openStream(handlers, account.key);
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("no-cache, no-transform");
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("x-request-id")).toMatch(REQUEST_ID);
    expect(response.headers.get("ratelimit-limit")).toBe("60");

    // initialize over SSE negotiates the transport's own version, whatever the client asks for.
    await expect202(await post(initialize("2025-06-18")));
    expect(jsonRpcResultSchema.parse(messageOf(await events.next())).result).toMatchObject({
      protocolVersion: "2024-11-05",
      capabilities: {
        tools: { listChanged: false },
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      },
      serverInfo: { name: "ocr-service", version: "2.0.0" },
    });
    await expect202(await post({ jsonrpc: "2.0", method: "notifications/initialized" }));

    // A client that sends a newer mcp-protocol-version header is not refused for it.
    await expect202(
      await post({ jsonrpc: "2.0", id: 1, method: "tools/list" }, { "mcp-protocol-version": "2025-06-18" }),
    );
    const tools = jsonRpcResultSchema.parse(messageOf(await events.next())).result.tools as { name: string }[];
    expect(tools.map((tool) => tool.name)).toEqual([
      "extract_text",
      "get_extraction",
      "show_extraction",
      "read_viewer_page",
    ]);

    await expect202(
      await post([
        { jsonrpc: "2.0", id: 2, method: "ping" },
        { jsonrpc: "2.0", id: 3, method: "ping" },
      ]),
    );
    const pings = [messageOf(await events.next()), messageOf(await events.next())];
    expect(pings).toEqual([
      { jsonrpc: "2.0", id: 2, result: {} },
      { jsonrpc: "2.0", id: 3, result: {} },
    ]);

    const called = await post(callTool({ image_source: { type: "base64", data: png } }, 4));
    expect(called.headers.get("x-credits-remaining")).toBe("2");
    await expect202(called);
    const result = jsonRpcResultSchema.parse(messageOf(await events.next()));
    expect(result.id).toBe(4);
    expect(expectExtracted(result.result)).toMatchObject({
      creditsUsed: 1,
      requestId: called.headers.get("x-request-id"),
    });
    expect(await account.balance()).toBe(2);

    // Malformed calls are JSON-RPC errors on the stream; a body that is not JSON-RPC is refused by the POST itself.
    await expect202(await post(callTool({ image_source: { type: "fax", data: "x" } }, 5)));
    expect(jsonRpcErrorSchema.parse(messageOf(await events.next())).error.code).toBe(-32602);
    const notRpc = await post({ hello: "world" });
    expect(notRpc.status).toBe(400);
    expect(jsonRpcErrorSchema.parse(await notRpc.json()).id).toBeNull();

    // The client goes away: the session goes with it.
    await events.cancel();
    await eventually(async () => (await post({ jsonrpc: "2.0", id: 6, method: "ping" })).status === 404);
  });

  it("a batch posted to a session counts each tools/call against the rate limit: over it, 429 and nothing run", async () => {
    const restore = setEnv({ RATE_LIMIT_PER_MINUTE: "4" });
    try {
      await waitForWindowRoom(60_000, 5_000);
      const account = await createAccount(10);
      const { events, post } = await openStream(route(), account.key); // the GET counts: 3 left
      const batch = [1, 2, 3, 4].map((id) => callTool({ image_source: { type: "base64", data: png } }, id));
      const limited = await post(batch);
      await expectApiError(limited, "rate_limited", /this batch has 4 messages/);
      expect(await account.balance()).toBe(10);
      // The refused batch took none of what was left: its POST counted once, and 2 requests remain.
      expect(limited.headers.get("ratelimit-remaining")).toBe("2");
      await expect202(await post({ jsonrpc: "2.0", id: 5, method: "ping" }));
      // Nothing of the batch was run: the first message on the stream is the ping's answer.
      expect(messageOf(await events.next())).toEqual({ jsonrpc: "2.0", id: 5, result: {} });
      await events.cancel();
    } finally {
      restore();
    }
  });

  it("a call whose stream closes is refunded or stopped, not replayed for its Idempotency-Key, and the retry on a new stream gets it", async () => {
    const account = await createAccount(5);
    const handlers = route();
    // The scan is served once the client has gone away, so the call is certainly still running when the stream closes.
    let fetches = 0;
    let serve!: () => void;
    const streamClosed = new Promise<void>((resolve) => (serve = resolve));
    server.use(
      http.get("https://files.example/two-pages.pdf", async () => {
        fetches += 1;
        if (fetches === 1) await streamClosed;
        return HttpResponse.arrayBuffer(fixtureArrayBuffer("mixed.pdf"), {
          headers: { "content-type": "application/pdf" },
        });
      }),
    );
    const call = callTool({ image_source: { type: "url", data: "https://files.example/two-pages.pdf" } }, 1);
    const idempotency = { "idempotency-key": "sse-undelivered-1" };
    const logs = vi.spyOn(console, "info");
    const restore = setEnv({ LOG_REQUESTS: "true" });
    try {
      const first = await openStream(handlers, account.key);
      const answer = first.post(call, idempotency);
      await eventually(() => fetches === 1);
      await first.events.cancel();
      await eventually(async () => (await first.post({ jsonrpc: "2.0", id: 2, method: "ping" })).status === 404);
      serve();

      // The call was charged, but its answer has no stream to go to: 404, and the charge is given back — whether the read
      // finished first (its open charge refunded) or the closed stream stopped it (the call's signal: unread pages
      // refunded, or nothing reserved yet when it stopped during the fetch).
      const lost = await answer;
      await expectApiError(
        lost,
        "not_found",
        /stream closed before the response could be delivered \(nothing was charged\)/,
      );
      const requestId = lost.headers.get("x-request-id")!;
      expect(await account.balance()).toBe(5);
      const { entries } = await listLedger(getStore(), account.userId, { limit: 10 });
      const own = entries
        .filter((entry) => entry.requestId === requestId)
        .map((entry) => [entry.reason, entry.delta, entry.pages]);
      expect([
        [],
        [
          ["refund", 2, 2],
          ["ocr", -2, 2],
        ],
      ]).toContainEqual(own);
      await expectLedgerConsistent(account);
      // The log line says so: nothing charged (and the refund, when the read had finished before the stream closed).
      const line = logs.mock.calls
        .map((args) => String(args[0]))
        .find((text) => text.includes(`request_id=${requestId}`));
      expect(line).toMatch(/ status=404 pages=0 ms=\d+( refunded=2)? code=not_found$/);

      // The retry with the same Idempotency-Key, to a new stream: not a replay of the 404; read again, charged, delivered.
      const second = await openStream(handlers, account.key);
      const retried = await second.post(call, idempotency);
      expect(retried.headers.get("idempotent-replayed")).toBeNull();
      expect(retried.headers.get("x-credits-remaining")).toBe("3");
      await expect202(retried);
      const body = expectExtracted(jsonRpcResultSchema.parse(messageOf(await second.events.next(30_000))).result);
      expect(body).toMatchObject({ creditsUsed: 2, pageCount: 2 });
      expect(await account.balance()).toBe(3);
      await expectLedgerConsistent(account);
      await second.events.cancel();
    } finally {
      restore();
      logs.mockRestore();
    }
  });

  it("a `: ping` comment keeps an idle stream alive", async () => {
    const account = await createAccount(0);
    const { events } = await openStream(route({ pingMs: 100 }), account.key);
    expect(await events.next()).toEqual({ comment: "ping" });
    expect(await events.next()).toEqual({ comment: "ping" });
    await events.cancel();
  });

  it("closes itself before its lifetime ends; the session is then gone (404)", async () => {
    const account = await createAccount(0);
    const opened = Date.now();
    const { events, post } = await openStream(route({ lifetimeMs: 800, drainMs: 400 }), account.key);
    await expect202(await post({ jsonrpc: "2.0", id: 1, method: "ping" }));
    expect(messageOf(await events.next())).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
    // The server ends the stream (the client never cancels it): the answer first, then the end, and nothing else —
    // no ping (60 s apart) and no endpoint event. A stream that kept open past its lifetime would time this out.
    expect(await events.next()).toBeNull();
    // Not before the drain period (a lower bound: a slow machine only makes it longer).
    expect(Date.now() - opened).toBeGreaterThanOrEqual(400);
    await expectApiError(
      await post({ jsonrpc: "2.0", id: 2, method: "ping" }),
      "not_found",
      /Unknown or expired MCP session/,
    );
  });

  it("near its end it waits for an answer in progress, delivers it, then closes", async () => {
    const account = await createAccount(2);
    server.use(
      http.get("https://files.example/slow.png", async () => {
        await delay(700);
        return HttpResponse.arrayBuffer(new Uint8Array(tinyPng("SLOW")).buffer, {
          headers: { "content-type": "image/png" },
        });
      }),
    );
    // Draining from 100 ms on: without the pending marker the stream would close before the answer.
    const { events, post } = await openStream(route({ lifetimeMs: 3_000, drainMs: 2_900 }), account.key);
    await expect202(await post(callTool({ image_source: { type: "url", data: "https://files.example/slow.png" } }, 1)));
    const body = expectExtracted(jsonRpcResultSchema.parse(messageOf(await events.next())).result);
    expect(body.extractedText).toContain("SLOW");
    expect(await events.next()).toBeNull();
    expect(await account.balance()).toBe(1);
  });

  it("a tool call is bounded by the stream's end: one that cannot finish in time answers `timeout`, refunded", async () => {
    const account = await createAccount(2);
    let fileAnswered = false;
    server.use(
      http.get("https://files.example/stalled.png", async () => {
        await delay(10_000);
        fileAnswered = true;
        return new HttpResponse(null, { status: 500 });
      }),
    );
    const { events, post } = await openStream(route({ lifetimeMs: 2_500, drainMs: 2_400 }), account.key);
    await expect202(
      await post(callTool({ image_source: { type: "url", data: "https://files.example/stalled.png" } }, 1)),
    );
    // The POST returns once its call is done: cut short by the stream's end, not by the file server answering.
    expect(fileAnswered).toBe(false);
    // Its answer, `timeout`, still reaches the client, and only then does the stream end.
    expectToolError(jsonRpcResultSchema.parse(messageOf(await events.next())).result, "timeout");
    expect(await events.next()).toBeNull();
    expect(await account.balance()).toBe(2);
  });
});

describe("legacy HTTP+SSE across two instances sharing one Redis", () => {
  withStore("redis");
  // The engine processes start on first use: not inside the short budget of a call on a 4 s stream.
  beforeAll(async () => {
    const account = await createAccount(1);
    expect((await callOcr({ image: png }, { key: account.key })).status).toBe(200);
  });

  const clients: McpClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
  });

  const mailboxKeys = () => countKeysWithPrefix(`${getEnv().REDIS_PREFIX}mailbox`);

  it("the stream is held by A and every POST goes to B: the client gets every response", async () => {
    const account = await createAccount(10);
    const a = route();
    const b = route();
    const log: WireLog = { requests: [] };
    const client = await connectClient({ kind: "v1 sse", key: account.key, posts: b, streams: a, log });
    clients.push(client);
    expect(await mailboxKeys()).toBeGreaterThan(0);

    const lists = Array.from({ length: 6 }, () => client.listTools());
    const calls = [1, 2, 3].map((n) =>
      client.callTool({
        name: "extract_text",
        arguments: { image_source: { type: "base64", data: tinyPng(`PAGE ${n}`).toString("base64") } },
      }),
    );
    for (const list of await Promise.all(lists))
      expect(list.tools.map((tool) => tool.name)).toEqual([
        "extract_text",
        "get_extraction",
        "show_extraction",
        "read_viewer_page",
      ]);
    const texts = (await Promise.all(calls)).map((result) => expectExtracted(result).extractedText);
    texts.forEach((text, index) => expect(text).toContain(`PAGE ${index + 1}`));
    expect(await account.balance()).toBe(7);

    expect(log.requests.filter((request) => request.method === "GET")).toHaveLength(1);
    expect(log.requests.filter((request) => request.method === "POST").every((request) => request.status === 202)).toBe(
      true,
    );

    await client.close();
    await eventually(async () => (await mailboxKeys()) === 0);
  });

  it.each(["v1 sse", "v2 sse"] as const)(
    "%s: the stream closes before its deadline and the client reconnects",
    async (kind) => {
      const account = await createAccount(5);
      // A session POST must finish 1 s before its stream's end: 10 s streams leave room for a small OCR even on a busy
      // machine (with 2 s, a call posted just after the reconnect had under a second and ended as `timeout` under load;
      // with 4 s, a machine also busy with another server's reads now and then had too little).
      const a = route({ lifetimeMs: 10_000, drainMs: 5_000 });
      const b = route();
      const log: WireLog = { requests: [] };
      const errors: Error[] = [];
      const client = await connectClient({
        kind,
        key: account.key,
        posts: b,
        streams: a,
        log,
        onTransportError: (error) => errors.push(error),
      });
      clients.push(client);
      expect((await client.listTools()).tools).toHaveLength(4);

      const streams = () => log.requests.filter((request) => request.method === "GET" && request.status === 200).length;
      await eventually(() => streams() >= 2);
      await sleep(50);
      expect((await client.listTools()).tools).toHaveLength(4);
      expectExtracted(
        await client.callTool({ name: "extract_text", arguments: { image_source: { type: "base64", data: png } } }),
      );

      const sessions = new Set(
        log.requests
          .filter((request) => request.method === "POST")
          .map((request) => new URL(request.url).searchParams.get("sessionId")),
      );
      expect(sessions.size).toBe(2);
      // The closed stream is reported as a transport error each time (the SDK then reconnects by itself).
      expect(errors.length).toBeGreaterThanOrEqual(1);
      expect(await account.balance()).toBe(4);
    },
  );
});
