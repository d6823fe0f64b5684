import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport as SseV1 } from "@modelcontextprotocol/sdk/client/sse.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { JobRunner, listJobViews, resetWorkQueue } from "@/lib/jobs";
import { createMcpRoute } from "@/lib/mcp";
import { extractTextOutputSchema, getExtractionOutputSchema } from "@/lib/mcp/jobs";
import { longScan } from "@/scripts/make-fixtures";
import { createAccount, expectLedgerConsistent, setEnv, tinyPng, withStore } from "../api/support";
import { createTestPool } from "../support/ocr";
import {
  MCP_ENDPOINT,
  eventually,
  jsonRpcResultSchema,
  keyCarrier,
  messageOf,
  readEvents,
  rpcRequest,
  toolResultSchema,
  type Handlers,
} from "./support";

import { getStore } from "@/lib/store";
import { startTestRunner } from "../support/jobs";

/*
 * Issue 29, point 1: an `extract_text` over the legacy SSE transport whose document became a job, and whose stream
 * closed while the call waited for it. The POST's answer names the job; the retry with the same Idempotency-Key (a new
 * JSON-RPC id from the SDK, a new stream) gets that job — one job, each page charged once. Without a key the job is
 * cancelled when the stream goes, its unread pages refunded. The official SDK client (SSEClientTransport), the real
 * route, a real Redis and BullMQ, a job runner started only once the stream is gone (so the job is still waiting).
 */

withStore("redis");

const PAGES = 3;
const pool = createTestPool();
let runner: JobRunner | undefined;
let scan: { pdf: Uint8Array; truth: string[] };
let restore: () => void;

beforeAll(async () => {
  scan = await longScan(PAGES);
  // One page of work per call: the 3-page scan is read as a job.
  restore = setEnv({ MAX_PDF_PAGES: "1" });
}, 60_000);
afterEach(async () => {
  await runner?.stop();
  runner = undefined;
});
afterAll(async () => {
  restore();
  await resetWorkQueue();
  await pool.terminate();
});

const route = createMcpRoute({ jobPollMs: 100, sse: { pingMs: 60_000 } });

/** The route, with every SSE stream it opens killable by the test (as a dropped connection would end it). */
function killableStreams(): { handlers: Handlers; kill(): void; opened(): number } {
  const kills: (() => void)[] = [];
  let count = 0;
  const handlers: Handlers = {
    POST: route.POST,
    GET: async (req) => {
      const response = await route.GET(req);
      if (!response.body) return response;
      count += 1;
      const reader = response.body.getReader();
      let controller!: ReadableStreamDefaultController<Uint8Array>;
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          controller = c;
        },
        async pull(c) {
          const { done, value } = await reader.read().catch(() => ({ done: true as const, value: undefined }));
          if (done) c.close();
          else c.enqueue(value);
        },
        cancel: () => reader.cancel(),
      });
      kills.push(() => {
        void reader.cancel().catch(() => undefined);
        try {
          controller.error(new Error("connection dropped"));
        } catch {
          // already closed
        }
      });
      return new Response(body, { status: response.status, headers: response.headers });
    },
  };
  return { handlers, kill: () => kills.splice(0).forEach((kill) => kill()), opened: () => count };
}

/** An SDK v1 SSE client whose `tools/call` POSTs carry `idempotencyKey` (as an agent that retries would send it). */
async function sseClient(key: string, handlers: Handlers, idempotencyKey?: string): Promise<ClientV1> {
  const { url, headers } = keyCarrier(key);
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    if (request.method === "GET") return handlers.GET(request);
    const text = await request.clone().text();
    const headers = new Headers(request.headers);
    if (idempotencyKey !== undefined && text.includes('"tools/call"')) headers.set("idempotency-key", idempotencyKey);
    return handlers.POST(new Request(request, { headers }));
  };
  const client = new ClientV1({ name: "lost-answers", version: "1.0.0" });
  const transport = new SseV1(url, { fetch, requestInit: { headers } });
  transport.onerror = () => undefined;
  await client.connect(transport);
  return client;
}

const callArgs = () => ({
  name: "extract_text",
  arguments: { image_source: { type: "base64", data: Buffer.from(scan.pdf).toString("base64"), filename: "scan.pdf" } },
});

async function errorOf(work: Promise<unknown>): Promise<Error> {
  try {
    await work;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the call to fail");
}

describe("a long scan over SSE whose stream closes while its job reads", () => {
  it("with an Idempotency-Key: the answer names the job; the retry gets that job, one job, charged once", async () => {
    const account = await createAccount(10);
    const streams = killableStreams();
    const client = await sseClient(account.key, streams.handlers, "lost-answer-1");
    try {
      const first = client.callTool(callArgs(), undefined, { timeout: 60_000 });
      // The job is accepted (every page reserved); no runner reads it yet.
      await eventually(async () => (await account.balance()) === 10 - PAGES);
      const started = Date.now();
      streams.kill();
      const lost = await errorOf(first);
      // Noticed within about a second, not at the end of the call's 28 s budget.
      expect(Date.now() - started).toBeLessThan(10_000);
      const { jobs } = await listJobViews(getStore(), account.userId, { limit: 10 });
      expect(jobs).toHaveLength(1);
      const jobId = jobs[0]!.jobId;
      expect(lost.message).toContain("404");
      expect(lost.message).toContain(`job ${jobId}`);
      expect(lost.message).toMatch(/same Idempotency-Key/);
      // The job goes on (a retry finds it).
      expect(jobs[0]!.status).toBe("queued");

      runner = startTestRunner("lost-answers", pool);
      // The SDK reconnects its stream by itself; the retry is the same call (a new JSON-RPC id) with the same key.
      await eventually(() => streams.opened() >= 2);
      const retried = toolResultSchema.parse(await client.callTool(callArgs(), undefined, { timeout: 60_000 }));
      expect(retried.isError ?? false, JSON.stringify(retried.content).slice(0, 300)).toBe(false);
      const body = extractTextOutputSchema.strict().parse(retried.structuredContent);
      expect(body.job?.jobId).toBe(jobId);
      if (body.job?.status !== "succeeded") {
        await eventually(async () => {
          const slice = getExtractionOutputSchema.parse(
            toolResultSchema.parse(await client.callTool({ name: "get_extraction", arguments: { job_id: jobId } }))
              .structuredContent,
          );
          return slice.status === "succeeded";
        }, 90_000);
      }
      expect((await listJobViews(getStore(), account.userId, { limit: 10 })).jobs.map((job) => job.jobId)).toEqual([
        jobId,
      ]);
      expect(await account.balance()).toBe(10 - PAGES);
      await expectLedgerConsistent(account);
    } finally {
      await client.close().catch(() => undefined);
    }
  }, 150_000);

  it("without a key: the job is cancelled when the stream closes, every unread page refunded, and the answer says so", async () => {
    const account = await createAccount(10);
    const streams = killableStreams();
    const client = await sseClient(account.key, streams.handlers);
    try {
      const first = client.callTool(callArgs(), undefined, { timeout: 60_000 });
      await eventually(async () => (await account.balance()) === 10 - PAGES);
      streams.kill();
      const lost = await errorOf(first);
      const { jobs } = await listJobViews(getStore(), account.userId, { limit: 10 });
      expect(jobs).toHaveLength(1);
      expect(jobs[0]!.status).toBe("cancelled");
      expect(lost.message).toContain(`job ${jobs[0]!.jobId}`);
      expect(lost.message).toMatch(/cancelled when the stream closed/);
      expect(await account.balance()).toBe(10);
      await expectLedgerConsistent(account);
    } finally {
      await client.close().catch(() => undefined);
    }
  }, 60_000);
});

describe("an Idempotency-Key on a session POST", () => {
  it("a delivered answer is replayed onto the retry's new stream, under the retry's JSON-RPC id; charged once", async () => {
    const account = await createAccount(5);
    const open = async () => {
      const response = await route.GET(
        new Request(MCP_ENDPOINT, { headers: { accept: "text/event-stream", "x-api-key": account.key } }),
      );
      const events = readEvents(response);
      const query = new URL((await events.next())!.data!, MCP_ENDPOINT).search;
      const post = (body: unknown) =>
        route.POST(rpcRequest(body, { key: account.key, query, headers: { "idempotency-key": "sse-replay-1" } }));
      return { events, post };
    };
    const call = (id: number) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: {
        name: "extract_text",
        arguments: { image_source: { type: "base64", data: tinyPng("REPLAY 7").toString("base64") } },
      },
    });
    const first = await open();
    const answered = await first.post(call(1));
    expect(answered.status).toBe(202);
    const original = jsonRpcResultSchema.parse(messageOf(await first.events.next()));
    expect(original.id).toBe(1);
    expect(await account.balance()).toBe(4);
    await first.events.cancel();

    // The SDK's retry: a new stream, a new id, the same key and call.
    const second = await open();
    const replayed = await second.post(call(7));
    expect(replayed.status).toBe(202);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    const again = jsonRpcResultSchema.parse(messageOf(await second.events.next()));
    expect(again).toEqual({ ...original, id: 7 });
    expect(await account.balance()).toBe(4);
    // Another call under the same key: refused, nothing run.
    const other = await second.post({
      ...call(8),
      params: {
        ...call(8).params,
        arguments: { image_source: { type: "base64", data: tinyPng("OTHER").toString("base64") } },
      },
    });
    expect(other.status).toBe(422);
    await second.events.cancel();
  }, 60_000);
});
