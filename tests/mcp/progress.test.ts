import { afterEach, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { createMcpRoute } from "@/lib/mcp";
import { REQUEST_ID, base64Of, createAccount, expectLedgerConsistent, groundTruth, withStore } from "../api/support";
import {
  CLIENT_KINDS,
  MCP_ENDPOINT,
  callToolWithProgress,
  connectClient,
  expectExtracted,
  jsonRpcResultSchema,
  messageOf,
  readEvents,
  rpcRequest,
  type McpClient,
  type ProgressReport,
  type SseEvent,
} from "./support";

/*
 * Progress on long tool calls: a `tools/call` that carries `_meta.progressToken` gets `notifications/progress` while
 * the document is read — in an event-stream answer over Streamable HTTP, on the session's stream over SSE — so clients
 * that reset their timeout on progress keep waiting. The interval is shortened through `createMcpRoute`.
 */

withStore("memory");

const PROGRESS_MS = 100;
const route = createMcpRoute({ progressIntervalMs: PROGRESS_MS, sse: { pingMs: 60_000 } });

/** Three scanned pages: seconds of OCR, many progress intervals. */
const SCAN = "scanned-3.pdf";
const scan = base64Of(SCAN);
const SCAN_CER = 0.05;
const paragraph = base64Of("paragraph.png");

const open: McpClient[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close().catch(() => undefined)));
});

describe.each(CLIENT_KINDS)("%s", (kind) => {
  it("reports progress before the result, so a request timeout shorter than the call does not cut it off", async () => {
    const account = await createAccount(10);
    const transportErrors: Error[] = [];
    const client = await connectClient({
      kind,
      key: account.key,
      posts: route,
      onTransportError: (error) => transportErrors.push(error),
    });
    open.push(client);

    const reports: ProgressReport[] = [];
    // Reading three scanned pages takes two seconds or more; 1 s without news times the request out. The
    // notifications every 100 ms keep resetting that clock (resetTimeoutOnProgress), so the call gets its result —
    // with room for a busy machine to deliver one 10 intervals late.
    const result = await callToolWithProgress(
      client,
      { image_source: { type: "base64", data: scan } },
      (report) => reports.push(report),
      1_000,
    );

    const body = expectExtracted(result);
    expect(body).toMatchObject({ creditsUsed: 3, pageCount: 3 });
    expect(characterErrorRate(body.extractedText, groundTruth(SCAN))).toBeLessThan(SCAN_CER);
    // Reports count only before the result: the client drops one that comes later (its token is done).
    expect(reports.length).toBeGreaterThanOrEqual(1);
    expect(transportErrors).toEqual([]);
    const values = reports.map((report) => report.progress);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(new Set(values).size).toBe(values.length);
    expect(reports[0]!.message).toMatch(/^Reading the document: \d+ s so far$/);
    expect(await account.balance()).toBe(7);
    await expectLedgerConsistent(account);
  });
});

const callTool = (id: number, meta?: Record<string, unknown>) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: {
    name: "extract_text",
    arguments: { image_source: { type: "base64", data: paragraph } },
    ...(meta ? { _meta: meta } : {}),
  },
});

/** All events of a finished event-stream answer. */
async function allEvents(response: Response): Promise<SseEvent[]> {
  const events = readEvents(response);
  const list: SseEvent[] = [];
  for (let event = await events.next(30_000); event !== null; event = await events.next(30_000)) list.push(event);
  return list;
}

const progressSchema = {
  jsonrpc: "2.0",
  method: "notifications/progress",
  params: {
    progressToken: "scan-1",
    progress: expect.any(Number) as number,
    message: expect.stringMatching(/s so far$/) as string,
  },
};

describe("Streamable HTTP, raw", () => {
  it("a call with a progress token from a client that accepts an event stream is answered as one: progress, then the result", async () => {
    const account = await createAccount(5);
    const response = await route.POST(
      rpcRequest(callTool(7, { progressToken: "scan-1" }), {
        key: account.key,
        headers: { accept: "application/json, text/event-stream" },
      }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(response.headers.get("x-request-id")).toMatch(REQUEST_ID);
    // The headers leave before the work is done: the balance is not known yet.
    expect(response.headers.get("x-credits-remaining")).toBeNull();

    const messages = (await allEvents(response))
      .filter((event) => event.data !== undefined)
      .map((event) => messageOf(event));
    const result = messages.pop();
    expect(messages.length).toBeGreaterThanOrEqual(1);
    for (const message of messages) expect(message).toEqual(progressSchema);
    const parsed = jsonRpcResultSchema.parse(result);
    expect(parsed.id).toBe(7);
    expect(expectExtracted(parsed.result).creditsUsed).toBe(1);
    expect(await account.balance()).toBe(4);
  });

  it.each([
    ["accepts only JSON", { accept: "application/json" }, { progressToken: "scan-1" }],
    [
      "sends an Idempotency-Key (its answer is stored whole for replays)",
      { accept: "application/json, text/event-stream", "idempotency-key": "progress-idem-1" },
      { progressToken: "scan-1" },
    ],
    ["asks for no progress", { accept: "application/json, text/event-stream" }, undefined],
  ])("a client that %s gets one JSON answer", async (_label, headers, meta) => {
    const account = await createAccount(5);
    const response = await route.POST(rpcRequest(callTool(8, meta), { key: account.key, headers }));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(response.headers.get("x-credits-remaining")).toBe("4");
    const parsed = jsonRpcResultSchema.parse(await response.json());
    expect(expectExtracted(parsed.result).creditsUsed).toBe(1);
  });
});

describe("legacy SSE, raw", () => {
  it("a call with a progress token posted to a session: progress on the stream, then the result", async () => {
    const account = await createAccount(5);
    const stream = await route.GET(
      new Request(MCP_ENDPOINT, { headers: { accept: "text/event-stream", "x-api-key": account.key } }),
    );
    const events = readEvents(stream);
    const endpoint = await events.next();
    expect(endpoint?.event).toBe("endpoint");
    const query = new URL(endpoint!.data!, MCP_ENDPOINT).search;

    const posted = await route.POST(rpcRequest(callTool(9, { progressToken: "scan-1" }), { key: account.key, query }));
    expect(posted.status).toBe(202);
    expect(posted.headers.get("x-credits-remaining")).toBe("4");

    const messages: unknown[] = [];
    for (;;) {
      const event = await events.next(30_000);
      if (event?.comment !== undefined) continue;
      const message = messageOf(event);
      messages.push(message);
      if (typeof message === "object" && message !== null && "id" in message) break;
    }
    const result = messages.pop();
    expect(messages.length).toBeGreaterThanOrEqual(1);
    for (const message of messages) expect(message).toEqual(progressSchema);
    expect(expectExtracted(jsonRpcResultSchema.parse(result).result).creditsUsed).toBe(1);
    await events.cancel();
  });
});
