import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { createMcpRoute } from "@/lib/mcp";
import { base64Of, createAccount, expectLedgerConsistent, groundTruth, withStore } from "../api/support";
import { expectExtracted, expectToolError } from "../mcp/support";
import { runCli, withBuiltCli, withTestServer, type LoggedRequest } from "./support";

/*
 * `ocr mcp`, the stdio bridge, driven by the official SDK client over StdioClientTransport (the way Claude Desktop
 * launches it), forwarding to the real /api/mcp route handlers on a localhost port.
 */

withStore("memory");
const cli = withBuiltCli();
const server = withTestServer();

const png = base64Of("paragraph.png");
const pdf = base64Of("born-digital.pdf");
const IMAGE_CER = 0.05;
const PDF_CER = 0.01;

interface Bridge {
  client: Client;
  stderr: () => string;
}

const open: Client[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close().catch(() => undefined)));
  server.current.intercept = undefined;
  server.current.requests.length = 0;
});

async function startBridge(key: string, args: string[] = []): Promise<Bridge> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli.path, "mcp", ...args],
    env: { PATH: process.env.PATH ?? "", OCR_BASE_URL: server.current.baseUrl, FETCH_MCP_SERVER_API_KEY: key },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const client = new Client({ name: "cli-bridge-tests", version: "1.0.0" });
  open.push(client);
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

const mcpRequests = () => server.current.requests.filter((request) => request.path === "/api/mcp");
const rpcMethod = (request: LoggedRequest) => {
  try {
    return (JSON.parse(request.body) as { method?: string }).method;
  } catch {
    return undefined;
  }
};

function extract(client: Client, data: string, format?: string) {
  return client.callTool({
    name: "extract_text",
    arguments: { image_source: { type: "base64", data }, ...(format && { output_format: format }) },
  });
}

describe("ocr mcp over Streamable HTTP", () => {
  it("answers initialize with the service's info, lists extract_text and reads a PNG and a PDF", async () => {
    const account = await createAccount(10);
    const { client, stderr } = await startBridge(account.key);
    expect(client.getServerVersion()).toMatchObject({ name: "ocr-service", version: "2.0.0" });
    expect(client.getServerCapabilities()).toMatchObject({ tools: {} });
    // The upstream's capabilities, forwarded: the viewer's ui:// resource (issue 42) among them.
    expect(client.getServerCapabilities()).toMatchObject({ resources: { listChanged: false } });
    expect(stderr()).toMatch(
      /ocr mcp: connected to http:\/\/127\.0\.0\.1:\d+\/api\/mcp over Streamable HTTP \(ocr-service 2\.0\.0\)/,
    );

    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      "extract_text",
      "get_extraction",
      "show_extraction",
      "read_viewer_page",
    ]);
    expect(tools[0]!.inputSchema.required).toEqual(["image_source"]);
    expect(tools[0]!.outputSchema?.type).toBe("object");

    const text = expectExtracted(await extract(client, png));
    expect(characterErrorRate(text.extractedText, groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);
    const markdown = expectExtracted(await extract(client, pdf, "markdown"));
    expect(markdown.extractedText).toMatch(/^#+ Introduction$/m);
    expect(
      characterErrorRate(markdown.extractedText.replace(/^#+ |^---$/gm, ""), groundTruth("born-digital.pdf")),
    ).toBeLessThan(PDF_CER);
    expect(await account.balance()).toBe(6);
    await expectLedgerConsistent(account);

    // Upstream: stateless JSON-RPC POSTs (no sessionId), each with the key and an Idempotency-Key of its own.
    const posts = mcpRequests().filter((request) => request.method === "POST");
    expect(posts.map(rpcMethod)).toEqual([
      "initialize",
      "notifications/initialized",
      "tools/list",
      "tools/call",
      "tools/call",
    ]);
    for (const post of posts) {
      expect(post.search).toBe("");
      expect(post.headers.get("x-api-key")).toBe(account.key);
    }
    const keys = posts.map((post) => post.headers.get("idempotency-key"));
    expect(new Set(keys).size).toBe(posts.length);
  });

  it("passes tool errors and JSON-RPC errors through unchanged; ping goes upstream", async () => {
    const account = await createAccount(2);
    const { client } = await startBridge(account.key);
    expectToolError(await extract(client, pdf), "insufficient_credits");
    expectToolError(await extract(client, "bm90IGFuIGltYWdl"), "unsupported_media_type");
    expect(await account.balance()).toBe(2);

    const error = await client.callTool({ name: "read_minds", arguments: {} }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32602);
    expect((error as McpError).message).toBe(
      'MCP error -32602: Unknown tool "read_minds": this server has extract_text, get_extraction, show_extraction and read_viewer_page',
    );

    server.current.requests.length = 0;
    await client.ping();
    expect(mcpRequests().map(rpcMethod)).toEqual(["ping"]);
  });

  it("retries a 503 with the same Idempotency-Key after Retry-After; the call is charged once", async () => {
    const account = await createAccount(10);
    const { client, stderr } = await startBridge(account.key);
    let refused = false;
    server.current.intercept = (request) => {
      if (refused || rpcMethod(request) !== "tools/call") return undefined;
      refused = true;
      return Response.json(
        { success: false, error: { code: "overloaded", message: "The OCR queue is full" }, requestId: "req_injected" },
        { status: 503, headers: { "retry-after": "1" } },
      );
    };
    expectExtracted(await extract(client, png));
    const calls = mcpRequests().filter((request) => rpcMethod(request) === "tools/call");
    expect(calls.map((request) => request.status)).toEqual([503, 200]);
    expect(calls[1]!.headers.get("idempotency-key")).toBe(calls[0]!.headers.get("idempotency-key"));
    expect(stderr()).toMatch(/POST \/api\/mcp: HTTP 503 overloaded; retrying in 1\.0 s/);
    expect(await account.balance()).toBe(9);
  });

  it("a refused key: exit code 3 at start, with the service's message", async () => {
    const run = await runCli(cli.path, ["mcp"], {
      env: {
        OCR_BASE_URL: server.current.baseUrl,
        FETCH_MCP_SERVER_API_KEY: "ocr_wrong0000000000000000000000000000000000",
      },
    });
    expect(run.code).toBe(3);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(
      /cannot connect to .*\/api\/mcp: Streamable HTTP: HTTP 403 unauthorized: Invalid or revoked API key/,
    );
    // Not retried on SSE: the key is refused there too.
    expect(mcpRequests().filter((request) => request.method === "GET")).toEqual([]);
  });
});

// Issue 39: the bridge's SDK client dropped the service's progress notifications ("unknown token"), so a host that
// resets its timeout on progress never saw any.
describe("ocr mcp forwards progress notifications", () => {
  // The same route, with a notification every 50 ms (5 s by default), serves the tool calls.
  const progressRoute = createMcpRoute({ progressIntervalMs: 50 });
  const viaProgressRoute = (request: LoggedRequest) =>
    request.method === "POST" && request.path === "/api/mcp" && rpcMethod(request) === "tools/call"
      ? progressRoute.POST(
          new Request(`${server.current.baseUrl}/api/mcp${request.search}`, {
            method: "POST",
            headers: request.headers,
            body: new Uint8Array(request.raw),
          }),
        )
      : undefined;

  it.each([
    ["Streamable HTTP", []],
    ["SSE", ["--transport", "sse"]],
  ])("over %s: a host's onprogress sees them, under its own token", async (label, args) => {
    const account = await createAccount(10);
    server.current.intercept = viaProgressRoute;
    const { client } = await startBridge(account.key, args);
    const reports: { progress: number; message?: string }[] = [];
    const result = await client.callTool(
      {
        name: "extract_text",
        arguments: { image_source: { type: "base64", data: png } },
      },
      undefined,
      { onprogress: (report) => reports.push(report), resetTimeoutOnProgress: true },
    );
    // What the call ended with does not matter here (a busy machine may end it as `timeout`): it was forwarded.
    expect(result.content).toBeDefined();
    expect(reports.length, label).toBeGreaterThanOrEqual(1);
    for (let i = 1; i < reports.length; i++) expect(reports[i]!.progress).toBeGreaterThan(reports[i - 1]!.progress);
    expect(reports[0]!.message).toMatch(/^Reading the document/);
    const call = mcpRequests().find((request) => request.method === "POST" && rpcMethod(request) === "tools/call");
    // Over Streamable HTTP the call goes without an Idempotency-Key, or it would be answered whole (no notification).
    if (label === "Streamable HTTP") expect(call?.headers.has("idempotency-key")).toBe(false);
    else expect(call?.headers.has("idempotency-key")).toBe(true);
  });

  it("a call without progress keeps its Idempotency-Key", async () => {
    const account = await createAccount(10);
    const { client } = await startBridge(account.key);
    expectExtracted(await extract(client, png));
    const call = mcpRequests().find((request) => request.method === "POST" && rpcMethod(request) === "tools/call");
    expect(call?.headers.get("idempotency-key")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("ocr mcp falling back to SSE", () => {
  it("uses GET /api/mcp (SSE) + POST ?sessionId when Streamable HTTP POSTs fail", async () => {
    const account = await createAccount(10);
    // A server without Streamable HTTP: POST without a session is not allowed.
    server.current.intercept = (request) =>
      request.method === "POST" && request.path === "/api/mcp" && !request.search.includes("sessionId")
        ? new Response("Method Not Allowed", { status: 405, headers: { allow: "GET" } })
        : undefined;
    const { client, stderr } = await startBridge(account.key);
    expect(stderr()).toMatch(/Streamable HTTP failed \(HTTP 405: Method Not Allowed\); trying SSE/);
    expect(stderr()).toMatch(/connected to .*\/api\/mcp over SSE \(ocr-service 2\.0\.0\)/);

    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      "extract_text",
      "get_extraction",
      "show_extraction",
      "read_viewer_page",
    ]);
    const body = expectExtracted(await extract(client, png, "json"));
    expect(JSON.parse(body.extractedText)).toHaveProperty("pages");
    expect(await account.balance()).toBe(9);

    const requests = mcpRequests();
    const stream = requests.find((request) => request.method === "GET");
    expect(stream?.headers.get("accept")).toBe("text/event-stream");
    expect(stream?.headers.get("x-api-key")).toBe(account.key);
    const sessionPosts = requests.filter(
      (request) => request.method === "POST" && request.search.startsWith("?sessionId="),
    );
    expect(sessionPosts.map(rpcMethod)).toEqual([
      "initialize",
      "notifications/initialized",
      "tools/list",
      "tools/call",
    ]);
    expect(sessionPosts.every((request) => request.status === 202)).toBe(true);
  });

  it("--transport sse goes straight to SSE", async () => {
    const account = await createAccount(10);
    const { client, stderr } = await startBridge(account.key, ["--transport", "sse"]);
    expect(stderr()).not.toContain("Streamable HTTP failed");
    expectExtracted(await extract(client, png));
    expect(mcpRequests().filter((request) => request.method === "POST" && request.search === "")).toEqual([]);
  });
});
