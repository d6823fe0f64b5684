import { createMCPClient, type MCPClient } from "@ai-sdk/mcp";
import { afterEach, describe, expect, it } from "vitest";
import * as mcpRoute from "@/app/api/mcp/route";
import { characterErrorRate } from "@/bench/metrics";
import { createMcpRoute } from "@/lib/mcp";
import { base64Of, createAccount, expectLedgerConsistent, groundTruth, sleep, withStore } from "../api/support";
import { MCP_ENDPOINT, expectExtracted, messageOf, readEvents, routeFetch, rpcRequest, type WireLog } from "./support";

/*
 * The Vercel AI SDK's MCP client (`@ai-sdk/mcp`, `createMCPClient`) against the route module, with `fetch` calling
 * its handlers in process: its SSE transport (which sends `mcp-protocol-version: 2025-11-25` on its first GET) and
 * its HTTP transport (2026-07-28 discovery, or the 2025 `initialize` handshake).
 */

const paragraph = base64Of("paragraph.png");
const IMAGE_CER = 0.05;

type Variant = "sse" | "http" | "http (2025 handshake)";
const VARIANTS: Variant[] = ["sse", "http", "http (2025 handshake)"];

function connect(variant: Variant, key: string, log?: WireLog): Promise<MCPClient> {
  return createMCPClient({
    transport: {
      type: variant === "sse" ? "sse" : "http",
      url: MCP_ENDPOINT,
      headers: { "x-api-key": key },
      fetch: routeFetch(mcpRoute, mcpRoute, log),
    },
    protocolVersionDiscovery: variant !== "http (2025 handshake)",
  });
}

describe("Vercel AI SDK MCP client (redis store)", () => {
  withStore("redis");

  const open: MCPClient[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((client) => client.close().catch(() => undefined)));
  });

  describe.each(VARIANTS)("%s", (variant) => {
    it("lists extract_text, reads an image, and offers the tool to a model", async () => {
      const account = await createAccount(5);
      const log: WireLog = { requests: [] };
      const client = await connect(variant, account.key, log);
      open.push(client);

      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual([
        "extract_text",
        "get_extraction",
        "show_extraction",
        "read_viewer_page",
      ]);
      expect(tools[0]!.description).toMatch(/read as an asynchronous job/);

      const body = expectExtracted(
        await client.callTool({
          name: "extract_text",
          arguments: { image_source: { type: "base64", data: paragraph, filename: "paragraph.png" } },
        }),
      );
      expect(body).toMatchObject({
        success: true,
        userId: account.userId,
        inputSource: "base64",
        creditsUsed: 1,
        pageCount: 1,
      });
      expect(characterErrorRate(body.extractedText, groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);

      // What `generateText({ tools })` is given: the tool, with its schema, ready to run.
      const toolSet = await client.tools();
      expect(Object.keys(toolSet)).toEqual(["extract_text", "get_extraction", "show_extraction", "read_viewer_page"]);
      expect(await account.balance()).toBe(4);
      await expectLedgerConsistent(account);

      const gets = log.requests.filter((request) => request.method === "GET");
      const posts = log.requests.filter((request) => request.method === "POST");
      if (variant === "sse") {
        // One stream (its GET carries mcp-protocol-version: 2025-11-25), every message posted to its session.
        expect(gets.map((request) => request.status)).toEqual([200]);
        expect(
          posts.every((request) => new URL(request.url).searchParams.has("sessionId") && request.status === 202),
        ).toBe(true);
      } else {
        expect(
          posts.every(
            (request) => !new URL(request.url).searchParams.has("sessionId") && [200, 202].includes(request.status),
          ),
        ).toBe(true);
        // 2026-07-28 has no GET. With the 2025 handshake the transport opens its optional inbound stream (twice when
        // its first GET is still pending as `notifications/initialized` is accepted) with the very headers of the
        // SSE transport's GET, so it gets legacy streams: it ignores them, and they close unused (`unusedMs`).
        if (variant === "http") expect(gets).toEqual([]);
        else expect(gets.length === 1 || gets.length === 2, JSON.stringify(gets)).toBe(true);
        expect(gets.every((request) => request.status === 200)).toBe(true);
      }
    });

    it("a wrong key: the connection fails with the service's message", async () => {
      const error = await connect(variant, "ocr_wrong00000000000000000000000000000000000").then(
        () => new Error("connected"),
        (reason: unknown) => reason,
      );
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(/403.*Invalid or revoked API key/s);
    });
  });
});

describe("the AI SDK's first SSE GET", () => {
  withStore("memory");

  const get = (headers: Record<string, string>) =>
    mcpRoute.GET(
      new Request(MCP_ENDPOINT, {
        headers: { accept: "text/event-stream", "mcp-protocol-version": "2025-11-25", ...headers },
      }),
    );

  it("with mcp-protocol-version: 2025-11-25 and the AI SDK's User-Agent opens the SSE stream: the first event is endpoint, retry 5 min", async () => {
    const account = await createAccount(0);
    const response = await get({ "x-api-key": account.key, "user-agent": "ai-sdk/2.0.99 node.js/24" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    // Its HTTP transport's GET looks the same and ignores the stream: it is told to come back in five minutes.
    expect(first).toMatch(/^event: endpoint\ndata: \/api\/mcp\?sessionId=\S+\nretry: 300000\n\n/);
    await reader.cancel();
  });

  // Issue 39: a Streamable HTTP client's standalone-stream GET taken for a legacy session held the SDK's reconnects
  // (a task's result among them) for the legacy stream's five-minute retry hint.
  it.each([
    ["2025-11-25", { "user-agent": "curl/8.5.0" }],
    ["2025-06-18", {}],
    ["2026-07-28", { "user-agent": "node" }],
  ])(
    "with mcp-protocol-version: %s from any other client (an SDK's standalone-stream GET) → 405",
    async (version, headers) => {
      const account = await createAccount(0);
      const response = await get({ "x-api-key": account.key, "mcp-protocol-version": version, ...headers });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("GET, POST, OPTIONS");
      expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(
        /no standalone SSE stream over Streamable HTTP/,
      );
    },
  );

  it.each([
    ["no mcp-protocol-version (a legacy client's first GET)", {}],
    [
      "mcp-protocol-version: 2024-11-05 (a legacy client's EventSource reconnecting)",
      { "mcp-protocol-version": "2024-11-05" },
    ],
  ])("%s opens the SSE stream", async (_label, headers) => {
    const account = await createAccount(0);
    const response = await mcpRoute.GET(
      new Request(MCP_ENDPOINT, { headers: { accept: "text/event-stream", "x-api-key": account.key, ...headers } }),
    );
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toMatch(
      /^event: endpoint\ndata: \/api\/mcp\?sessionId=/,
    );
    await reader.cancel();
  });

  it("a GET naming an mcp-session-id (this server hands out none) → 405", async () => {
    const account = await createAccount(0);
    const response = await get({ "x-api-key": account.key, "mcp-session-id": "abc" });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, POST, OPTIONS");
  });

  describe("a stream opened by a versioned GET closes early if its session is never used", () => {
    const UNUSED_MS = 300;
    const route = createMcpRoute({ sse: { unusedMs: UNUSED_MS, pingMs: 60_000 } });
    const ping = (id: number) => ({ jsonrpc: "2.0", id, method: "ping" });

    async function open(key: string, headers: Record<string, string>) {
      const response = await route.GET(
        new Request(MCP_ENDPOINT, { headers: { accept: "text/event-stream", "x-api-key": key, ...headers } }),
      );
      expect(response.status).toBe(200);
      const events = readEvents(response);
      const endpoint = await events.next();
      expect(endpoint?.event).toBe("endpoint");
      return { events, query: new URL(endpoint!.data!, MCP_ENDPOINT).search };
    }

    it("nothing posted: it ends after unusedMs (the AI SDK's HTTP transport ignores it and does not reopen it)", async () => {
      const account = await createAccount(0);
      const started = Date.now();
      const { events } = await open(account.key, {
        "mcp-protocol-version": "2025-11-25",
        "user-agent": "ai-sdk/2.0.99 node.js/24",
      });
      expect(await events.next(5_000)).toBeNull();
      expect(Date.now() - started).toBeGreaterThanOrEqual(UNUSED_MS - 50);
    });

    it("a message posted to the session: it stays open and carries the answers", async () => {
      const account = await createAccount(0);
      const { events, query } = await open(account.key, {
        "mcp-protocol-version": "2025-11-25",
        "user-agent": "ai-sdk/2.0.99 node.js/24",
      });
      expect((await route.POST(rpcRequest(ping(1), { key: account.key, query }))).status).toBe(202);
      expect(messageOf(await events.next())).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
      await sleep(UNUSED_MS * 2);
      expect((await route.POST(rpcRequest(ping(2), { key: account.key, query }))).status).toBe(202);
      expect(messageOf(await events.next())).toEqual({ jsonrpc: "2.0", id: 2, result: {} });
      await events.cancel();
    });

    it("a legacy client's GET (no version) is not cut short", async () => {
      const account = await createAccount(0);
      const { events } = await open(account.key, {});
      await expect(events.next(UNUSED_MS * 3)).rejects.toThrow(/no SSE event within the timeout/);
      await events.cancel();
    });
  });
});
