import { delay, http, HttpResponse } from "msw";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import * as mcpRoute from "@/app/api/mcp/route";
import { grantCredits, listLedger } from "@/lib/credits";
import { getEnv, parseEnv } from "@/lib/env";
import { MCP_MAX_DURATION_S, createMcpRoute, mcpConfig, type McpRoute } from "@/lib/mcp";
import { getStore } from "@/lib/store";
import {
  REQUEST_ID,
  createAccount,
  expectApiError,
  expectLedgerConsistent,
  fixture,
  setEnv,
  tinyPng,
  withRemoteFiles,
  withStore,
} from "../api/support";
import { waitForWindowRoom } from "../support/redis";
import {
  MCP_ENDPOINT,
  expectExtracted,
  expectToolError,
  jsonRpcErrorSchema,
  jsonRpcResultSchema,
  rpcRequest,
  type RpcOptions,
} from "./support";

/*
 * `/api/mcp` spoken to by hand, the way curl or a home-grown client would: JSON-RPC over POST with
 * `Accept: application/json` (or nothing), one JSON answer per request. Plus what the route adds around the SDK:
 * CORS, methods, body checks, rate limits, Idempotency-Key, and the tool's errors.
 */

const server = withRemoteFiles();
withStore("memory");

const png = tinyPng("HELLO 42").toString("base64");

async function rpc(
  body: unknown,
  options: RpcOptions = {},
  route: Pick<McpRoute, "POST"> = mcpRoute,
): Promise<Response> {
  return route.POST(rpcRequest(body, options));
}

/** The JSON-RPC result of a 200 answer. */
async function resultOf(response: Response): Promise<Record<string, unknown>> {
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  return jsonRpcResultSchema.parse(await response.json()).result;
}

function callTool(args: unknown, id = 1) {
  return { jsonrpc: "2.0", id, method: "tools/call", params: { name: "extract_text", arguments: args } };
}

describe("route module and configuration", () => {
  it("runs on Node with a maxDuration above the SSE stream's lifetime", () => {
    expect(mcpRoute.runtime).toBe("nodejs");
    expect(mcpRoute.maxDuration).toBe(MCP_MAX_DURATION_S);
    expect(mcpConfig(getEnv()).sse.lifetimeMs).toBeLessThanOrEqual((MCP_MAX_DURATION_S - 5) * 1000);
  });

  it("defaults: a tool budget under the sample client's 30 s timeout, pings every 15 s, a drain longer than a tool call", () => {
    expect(mcpConfig(parseEnv({}))).toEqual({
      toolDeadlineMs: 28_000,
      sse: {
        lifetimeMs: 295_000,
        drainMs: 33_000,
        pingMs: 15_000,
        pollMs: 100,
        idlePollMs: 1_000,
        storeOutageMs: 10_000,
        refreshMs: 15_000,
        unusedMs: 10_000,
      },
      streams: { perAccount: 20, perInstance: 200 },
    });
    const short = mcpConfig(parseEnv({}), { lifetimeMs: 20_000, toolDeadlineMs: 90_000 });
    expect(short.toolDeadlineMs).toBe(55_000); // capped by REQUEST_DEADLINE_MS
    expect(short.sse.drainMs).toBe(10_000); // at most half the lifetime
    // The MCP timings are constants now: a variable of the old name is not read.
    expect(mcpConfig(parseEnv({ MCP_SSE_PING_MS: "soon" })).sse.pingMs).toBe(15_000);
  });
});

describe("raw JSON-RPC over POST, as curl sends it", () => {
  it.each(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])(
    "initialize %s with the documented minimal params (no clientInfo) → 200 JSON echoing the version, tools and tasks",
    async (version) => {
      const account = await createAccount(0);
      const response = await rpc(
        {
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: version, capabilities: { tools: {} } },
        },
        { key: account.key },
      );
      expect(response.headers.get("x-request-id")).toMatch(REQUEST_ID);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
      expect(response.headers.get("mcp-session-id")).toBeNull();
      expect(await resultOf(response)).toEqual({
        protocolVersion: version,
        capabilities: {
          tools: { listChanged: false },
          tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
          resources: { listChanged: false },
        },
        serverInfo: { name: "ocr-service", title: "OCR service", version: "2.0.0" },
      });
    },
  );

  it("initialize with a version it does not know → the latest it supports", async () => {
    const account = await createAccount(0);
    const result = await resultOf(
      await rpc(
        {
          jsonrpc: "2.0",
          id: "a",
          method: "initialize",
          params: { protocolVersion: "2023-01-01", capabilities: {}, clientInfo: { name: "x", version: "1" } },
        },
        { key: account.key },
      ),
    );
    expect(result.protocolVersion).toBe("2025-11-25");
  });

  it.each([
    ["a numeric protocolVersion", { protocolVersion: 20241105, capabilities: {} }],
    ["no protocolVersion", { capabilities: {} }],
    ["clientInfo without a name", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { version: 1 } }],
    ["capabilities that are not an object", { protocolVersion: "2025-11-25", capabilities: "all" }],
  ])("initialize with %s → -32602 naming the field, not -32603 with a validation dump", async (_label, params) => {
    const account = await createAccount(0);
    const response = await rpc({ jsonrpc: "2.0", id: 7, method: "initialize", params }, { key: account.key });
    expect(response.status).toBe(200);
    const body = z
      .object({
        jsonrpc: z.literal("2.0"),
        id: z.literal(7),
        error: z.object({ code: z.number(), message: z.string() }),
      })
      .parse(await response.json());
    expect(body.error.code).toBe(-32602);
    expect(body.error.message).toMatch(/^Invalid params: initialize /);
    expect(body.error.message).not.toMatch(/invalid_type|"path"|\[/);
  });

  it.each([
    ["Accept: application/json", { accept: "application/json" }],
    ["no Accept", { accept: "" }],
    ["Accept: */*", { accept: "*/*" }],
    ["no Content-Type either", { accept: "", "content-type": "" }],
  ])("tools/list without params, %s → 200 JSON with extract_text", async (_label, headers) => {
    const account = await createAccount(0);
    const result = await resultOf(
      await rpc({ jsonrpc: "2.0", id: 2, method: "tools/list" }, { key: account.key, headers }),
    );
    const tools = result.tools as { name: string; inputSchema: { required: string[] } }[];
    expect(tools.map((tool) => tool.name)).toEqual([
      "extract_text",
      "get_extraction",
      "show_extraction",
      "read_viewer_page",
    ]);
    expect(tools[0]!.inputSchema.required).toEqual(["image_source"]);
  });

  // Issue 39: `"type": ["string", "null"]` (or an `anyOf` with null) trips strict clients, such as Gemini's function
  // declarations. A value that may be missing is an optional field.
  it("tools/list: the output schemas hold no null anywhere (no null type, no anyOf/oneOf)", async () => {
    const account = await createAccount(0);
    const result = await resultOf(await rpc({ jsonrpc: "2.0", id: 2, method: "tools/list" }, { key: account.key }));
    const tools = result.tools as { name: string; outputSchema: Record<string, unknown> }[];
    expect(tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(["extract_text", "get_extraction", "show_extraction", "read_viewer_page"]),
    );
    const unions: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (Array.isArray(node)) return node.forEach((item, index) => walk(item, `${path}[${index}]`));
      if (typeof node !== "object" || node === null) return;
      for (const [key, value] of Object.entries(node)) {
        if (key === "description") continue;
        if (key === "anyOf" || key === "oneOf" || key === "nullable") unions.push(`${path}.${key}`);
        if (key === "type" && (value === "null" || (Array.isArray(value) && value.includes("null"))))
          unions.push(`${path}.type`);
        walk(value, `${path}.${key}`);
      }
    };
    for (const tool of tools) walk(tool.outputSchema, tool.name);
    expect(unions).toEqual([]);
    // The optional fields that took the nulls' place are still there, optional.
    const named = (name: string) => tools.find((tool) => tool.name === name)!.outputSchema;
    const extract = named("extract_text") as { properties: { job: { properties: object; required: string[] } } };
    expect(Object.keys(extract.properties.job.properties)).toContain("nextCursor");
    expect(extract.properties.job.required).not.toContain("nextCursor");
    const slice = named("get_extraction") as { properties: object; required: string[] };
    expect(Object.keys(slice.properties)).toEqual(expect.arrayContaining(["jobId", "nextCursor"]));
    expect(slice.required).not.toContain("jobId");
    expect(slice.required).not.toContain("nextCursor");
  });

  it("a notification → 202 with an empty body", async () => {
    const account = await createAccount(0);
    const response = await rpc({ jsonrpc: "2.0", method: "notifications/initialized" }, { key: account.key });
    expect(response.status).toBe(202);
    expect(await response.text()).toBe("");
    expect(response.headers.get("x-request-id")).toMatch(REQUEST_ID);
  });

  it("a batch (2025-03-26) → an array of answers; two tool calls are charged under two request ids", async () => {
    const account = await createAccount(5);
    const response = await rpc(
      [
        { jsonrpc: "2.0", id: 1, method: "ping" },
        callTool({ image_source: { type: "base64", data: png } }, 2),
        callTool({ image_source: { type: "base64", data: png } }, 3),
      ],
      { key: account.key, headers: { "mcp-protocol-version": "2025-03-26" } },
    );
    expect(response.status).toBe(200);
    const answers = jsonRpcResultSchema.array().parse(await response.json());
    expect(answers.map((answer) => answer.id).sort()).toEqual([1, 2, 3]);
    expect(answers.find((answer) => answer.id === 1)!.result).toEqual({});
    const extracted = answers.filter((answer) => answer.id !== 1).map((answer) => expectExtracted(answer.result));
    const requestId = response.headers.get("x-request-id")!;
    expect(extracted.map((body) => body.requestId).sort()).toEqual([requestId, `${requestId}.2`]);
    expect(response.headers.get("x-credits-remaining")).toBe("3");
    expect(await account.balance()).toBe(3);
    const { entries } = await listLedger(getStore(), account.userId, { limit: 10 });
    expect(
      entries
        .filter((entry) => entry.reason === "ocr")
        .map((entry) => entry.requestId)
        .sort(),
    ).toEqual([requestId, `${requestId}.2`]);
  });

  it("ping → {}; an unknown method → -32601", async () => {
    const account = await createAccount(0);
    expect(await resultOf(await rpc({ jsonrpc: "2.0", id: 1, method: "ping" }, { key: account.key }))).toEqual({});
    const response = await rpc({ jsonrpc: "2.0", id: 9, method: "prompts/list" }, { key: account.key });
    expect(response.status).toBe(200);
    expect(jsonRpcErrorSchema.parse(await response.json())).toMatchObject({ id: 9, error: { code: -32601 } });
  });

  it("a tools/call answers with the tool result, x-credits-remaining and the rate-limit headers", async () => {
    const account = await createAccount(3);
    const response = await rpc(callTool({ image_source: { type: "base64", data: png }, output_format: "text" }), {
      key: account.key,
    });
    const body = expectExtracted(await resultOf(response));
    expect(body).toMatchObject({
      creditsUsed: 1,
      userId: account.userId,
      requestId: response.headers.get("x-request-id"),
    });
    expect(response.headers.get("x-credits-remaining")).toBe("2");
    expect(response.headers.get("ratelimit-limit")).toBe("60");
    expect(response.headers.get("ratelimit-remaining")).toMatch(/^\d+$/);
  });
});

describe("malformed calls → JSON-RPC errors; nothing charged", () => {
  it.each([
    [
      "an unknown tool",
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ocr", arguments: {} } },
      /Unknown tool "ocr"/,
    ],
    ["no arguments", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "extract_text" } }, /image_source/],
    ["type ftp", callTool({ image_source: { type: "ftp", data: "x" } }), /image_source\.type/],
    ["empty data", callTool({ image_source: { type: "base64", data: "" } }), /image_source\.data/],
    ["an unknown field", callTool({ image_source: { type: "base64", data: png }, language: "eng" }), /language/],
    [
      "a misspelt field",
      callTool({ image_source: { type: "url", data: "https://files.example/a.png", file_name: "a.png" } }),
      /file_name/,
    ],
    [
      "output_format docx",
      callTool({ image_source: { type: "base64", data: png }, output_format: "docx" }),
      /output_format/,
    ],
  ])("%s → -32602", async (_label, body, message) => {
    const account = await createAccount(5);
    const response = await rpc(body, { key: account.key });
    expect(response.status).toBe(200);
    const answer = jsonRpcErrorSchema.parse(await response.json());
    expect(answer.error.code).toBe(-32602);
    expect(answer.error.message).toMatch(message);
    expect(await account.balance()).toBe(5);
  });

  it("a body that is not JSON-RPC → the SDK's 400", async () => {
    const account = await createAccount(0);
    const response = await rpc({ hello: "world" }, { key: account.key });
    expect(response.status).toBe(400);
    expect(jsonRpcErrorSchema.parse(await response.json()).error.code).toBeLessThan(-32000);
  });

  it("bad JSON, a wrong content type, an oversized body → the catalogued HTTP errors", async () => {
    const account = await createAccount(0);
    await expectApiError(
      await rpc(null, { key: account.key, raw: '{"jsonrpc": "2.0",' }),
      "invalid_request",
      /not valid JSON/,
    );
    await expectApiError(
      await rpc(null, { key: account.key, raw: "x", headers: { "content-type": "text/plain" } }),
      "unsupported_media_type",
    );
    const restore = setEnv({ MAX_INLINE_BYTES: "1000" });
    try {
      const big = JSON.stringify(callTool({ image_source: { type: "base64", data: "A".repeat(80_000) } }));
      await expectApiError(await rpc(null, { key: account.key, raw: big }), "payload_too_large");
    } finally {
      restore();
    }
  });
});

describe("tool errors the model can act on → isError with the catalogued code; nothing charged", () => {
  async function toolError(
    args: unknown,
    code: string,
    credits = 5,
    route: Pick<McpRoute, "POST"> = mcpRoute,
  ): Promise<string> {
    const account = await createAccount(credits);
    const response = await rpc(callTool(args), { key: account.key }, route);
    const text = expectToolError(await resultOf(response), code);
    expect(response.headers.get("x-credits-remaining")).toBeNull();
    expect(await account.balance()).toBe(credits);
    await expectLedgerConsistent(account);
    return text;
  }

  it("insufficient_credits: an image on an empty account, a 3-page PDF on 2 credits", async () => {
    expect(await toolError({ image_source: { type: "base64", data: png } }, "insufficient_credits", 0)).toMatch(
      /needs 1 credit .* balance is 0/,
    );
    const pdf = fixture("born-digital.pdf").toString("base64");
    expect(await toolError({ image_source: { type: "base64", data: pdf } }, "insufficient_credits", 2)).toMatch(
      /3 credits/,
    );
  });

  it.each([
    ["plain text", Buffer.from("hello, this is not an image").toString("base64")],
    ["a GIF (named .png)", fixture("hostile/gif.gif").toString("base64")],
    ["HTML", fixture("hostile/html.html").toString("base64")],
  ])("unsupported_media_type: %s", async (_label, data) => {
    await toolError({ image_source: { type: "base64", data, filename: "scan.png" } }, "unsupported_media_type");
  });

  it("payload_too_large: an inline file over MAX_INLINE_BYTES (the hint points to URLs)", async () => {
    const restore = setEnv({ MAX_INLINE_BYTES: "2000" });
    try {
      const text = await toolError(
        { image_source: { type: "base64", data: tinyPng("BIG", 900, 600).toString("base64") } },
        "payload_too_large",
      );
      expect(text).toMatch(/type "url"/);
    } finally {
      restore();
    }
  });

  it.each([
    ["invalid base64", { type: "base64", data: "@@@not base64@@@" }],
    ["a non-http URL", { type: "url", data: "ftp://files.example/a.png" }],
    ["a loopback URL", { type: "url", data: "http://127.0.0.1/a.png" }],
    ["not a URL", { type: "url", data: "scan.png" }],
  ])("invalid_request: %s", async (_label, source) => {
    await toolError({ image_source: source }, "invalid_request");
  });

  // Issue 39: the `invalid_request` hint is about image_source; a bad `pages` argument has a hint of its own.
  it.each(["abc", "0-2", "7", "3-1"])(
    "invalid_request: pages %j names pages, in the message and in the hint",
    async (pages) => {
      const pdf = fixture("born-digital.pdf").toString("base64");
      const text = await toolError({ image_source: { type: "base64", data: pdf }, pages }, "invalid_request");
      const [message, hint] = text.split(" Hint: ");
      expect(message).toMatch(/^invalid_request: pages: /);
      expect(hint).toMatch(/^Check pages: /);
      expect(hint).not.toMatch(/image_source/);
    },
  );

  it.each(["truncated.pdf", "zero-pages.pdf", "truncated.png"])("unreadable_document: %s", async (name) => {
    await toolError(
      { image_source: { type: "base64", data: fixture(`hostile/${name}`).toString("base64") } },
      "unreadable_document",
    );
  });

  it("timeout: a call over the tool budget (mcpConfig().toolDeadlineMs) stops in time and is refunded", async () => {
    let fileAnswered = false;
    server.use(
      http.get("https://files.example/slow.png", async () => {
        await delay(5_000);
        fileAnswered = true;
        return new HttpResponse(null, { status: 500 });
      }),
    );
    const route = createMcpRoute({ toolDeadlineMs: 1000 });
    // `timeout`, not the file's 500: the call ended at its deadline, before the file server answered.
    await toolError({ image_source: { type: "url", data: "https://files.example/slow.png" } }, "timeout", 5, route);
    expect(fileAnswered).toBe(false);
  });

  it("fetch_failed: the URL answers 404", async () => {
    server.use(http.get("https://files.example/missing.png", () => new HttpResponse(null, { status: 404 })));
    expect(
      await toolError({ image_source: { type: "url", data: "https://files.example/missing.png" } }, "fetch_failed"),
    ).toMatch(/404/);
  });
});

describe("HTTP around the SDK", () => {
  it("OPTIONS → the CORS preflight, without a key", async () => {
    const response = await mcpRoute.OPTIONS(
      new Request(MCP_ENDPOINT, {
        method: "OPTIONS",
        headers: { origin: "https://app.example", "access-control-request-method": "POST" },
      }),
    );
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-methods")).toBe("GET, POST, OPTIONS");
    expect(response.headers.get("access-control-allow-headers")).toContain("mcp-protocol-version");
    expect(response.headers.get("access-control-expose-headers")).toContain("mcp-session-id");
    expect(response.headers.get("allow")).toBe("GET, POST, OPTIONS");
  });

  it.each(["PUT", "PATCH", "DELETE", "HEAD"] as const)("%s → 405 with Allow, no key needed", async (method) => {
    const response = await mcpRoute[method](new Request(MCP_ENDPOINT, { method }));
    if (method === "HEAD") expect(response.status).toBe(405);
    else await expectApiError(response, "method_not_allowed");
    expect(response.headers.get("allow")).toBe("GET, POST, OPTIONS");
  });

  it.each([
    ["no Accept", {}],
    ["Accept: application/json", { accept: "application/json" }],
    ["a Streamable HTTP session id", { accept: "text/event-stream", "mcp-session-id": "abc" }],
  ])("GET with %s → 405 with Allow, and no stream", async (_label, headers) => {
    const response = await mcpRoute.GET(new Request(MCP_ENDPOINT, { headers }));
    await expectApiError(response, "method_not_allowed");
    expect(response.headers.get("allow")).toBe("GET, POST, OPTIONS");
  });

  it("Idempotency-Key: a retried tools/call is replayed and charged once; another body → 422", async () => {
    const account = await createAccount(5);
    const headers = { "idempotency-key": "mcp-retry-1" };
    const body = callTool({ image_source: { type: "base64", data: png } }, 7);
    const first = await rpc(body, { key: account.key, headers });
    const original = expectExtracted(await resultOf(first));
    for (let attempt = 0; attempt < 3; attempt++) {
      const retry = await rpc(body, { key: account.key, headers });
      expect(retry.headers.get("idempotent-replayed")).toBe("true");
      expect(retry.headers.get("x-credits-remaining")).toBe("4");
      expect(expectExtracted(await resultOf(retry))).toEqual(original);
    }
    expect(await account.balance()).toBe(4);
    await expectApiError(
      await rpc(callTool({ image_source: { type: "base64", data: png } }, 8), { key: account.key, headers }),
      "idempotency_mismatch",
    );
  });

  it("Idempotency-Key: a tool error of the moment (no credits) is not replayed; the retry runs once credits arrive", async () => {
    const account = await createAccount(0);
    const headers = { "idempotency-key": "mcp-retry-credits" };
    const body = callTool({ image_source: { type: "base64", data: png } }, 9);
    expectToolError(await resultOf(await rpc(body, { key: account.key, headers })), "insufficient_credits");
    await grantCredits(getStore(), { userId: account.userId, credits: 2 });
    const retry = await rpc(body, { key: account.key, headers });
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
    expectExtracted(await resultOf(retry));
    expect(await account.balance()).toBe(1);
  });

  it("rate limits as REST: 429 with Retry-After past RATE_LIMIT_PER_MINUTE", async () => {
    const restore = setEnv({ RATE_LIMIT_PER_MINUTE: "2" });
    try {
      await waitForWindowRoom(60_000, 2_000);
      const account = await createAccount(0);
      const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
      expect((await rpc(ping, { key: account.key })).status).toBe(200);
      expect((await rpc(ping, { key: account.key })).status).toBe(200);
      const limited = await rpc(ping, { key: account.key });
      await expectApiError(limited, "rate_limited");
      expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
    } finally {
      restore();
    }
  });

  it("each tools/call of a batch counts: a batch of 4 with 3 left in the minute → 429, nothing run or charged", async () => {
    const restore = setEnv({ RATE_LIMIT_PER_MINUTE: "3" });
    try {
      await waitForWindowRoom(60_000, 3_000);
      const account = await createAccount(10);
      const batch = [1, 2, 3, 4].map((id) => callTool({ image_source: { type: "base64", data: png } }, id));
      const limited = await rpc(batch, { key: account.key });
      await expectApiError(limited, "rate_limited", /this batch has 4 messages/);
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(await account.balance()).toBe(10);
      await expectLedgerConsistent(account);
      // The refused batch took none of what was left: its HTTP request counted once, the 2 others are still there.
      expect(limited.headers.get("ratelimit-remaining")).toBe("2");
      const ping = { jsonrpc: "2.0", id: 9, method: "ping" };
      const pinged = await rpc(ping, { key: account.key });
      expect(pinged.status).toBe(200);
      expect(pinged.headers.get("ratelimit-remaining")).toBe("1");
      expect((await rpc(ping, { key: account.key })).status).toBe(200);
      await expectApiError(await rpc(ping, { key: account.key }), "rate_limited");
    } finally {
      restore();
    }
  });

  it("a batch of 3 tools/call with 4 allowed runs (3 credits), and then a single request is over the limit", async () => {
    const restore = setEnv({ RATE_LIMIT_PER_MINUTE: "4" });
    try {
      await waitForWindowRoom(60_000, 10_000);
      const account = await createAccount(10);
      const batch = [1, 2, 3].map((id) => callTool({ image_source: { type: "base64", data: png } }, id));
      const answered = await rpc(batch, { key: account.key });
      expect(answered.status).toBe(200);
      // What the batch took: its 3 calls.
      expect(answered.headers.get("ratelimit-remaining")).toBe("1");
      const results = z.array(jsonRpcResultSchema).parse(await answered.json());
      for (const result of results) expectExtracted(result.result);
      expect(await account.balance()).toBe(7);
      // 3 of 4 used: one more request fits, the next does not.
      expect((await rpc({ jsonrpc: "2.0", id: 9, method: "ping" }, { key: account.key })).status).toBe(200);
      await expectApiError(await rpc({ jsonrpc: "2.0", id: 10, method: "ping" }, { key: account.key }), "rate_limited");
    } finally {
      restore();
    }
  });

  it("a batch without tool calls costs one request per message too (issue 29, point 3)", async () => {
    const restore = setEnv({ RATE_LIMIT_PER_MINUTE: "7" });
    try {
      await waitForWindowRoom(60_000, 2_000);
      const account = await createAccount(0);
      const pings = [1, 2, 3, 4, 5].map((id) => ({ jsonrpc: "2.0", id, method: "ping" }));
      const answered = await rpc(pings, { key: account.key });
      expect(answered.status).toBe(200);
      expect(answered.headers.get("ratelimit-remaining")).toBe("2");
      await expectApiError(await rpc(pings, { key: account.key }), "rate_limited", /this batch has 5 messages/);
    } finally {
      restore();
    }
  });
});
