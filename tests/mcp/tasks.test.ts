import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport as SseV1 } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport as StreamableV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema, McpError, type Task } from "@modelcontextprotocol/sdk/types.js";
import { PDFDocument, StandardFonts } from "pdf-lib";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { characterErrorRate } from "@/bench/metrics";
import { JobRunner, readJobResult, resetWorkQueue } from "@/lib/jobs";
import { createMcpRoute } from "@/lib/mcp";
import { extractTextOutputSchema, getExtractionOutputSchema } from "@/lib/mcp/jobs";
import { longScan } from "@/scripts/make-fixtures";
import { base64Of, createAccount, setEnv, withStore, type TestAccount } from "../api/support";
import { createTestPool } from "../support/ocr";
import {
  connectClient,
  jsonRpcResultSchema,
  keyCarrier,
  routeFetch,
  rpcRequest,
  toolResultSchema,
  type Handlers,
  type ProgressReport,
} from "./support";
import { getEnv } from "@/lib/env";
import { getStore } from "@/lib/store";
import { startTestRunner } from "../support/jobs";
import { services } from "@/lib/services";

/*
 * Long documents over MCP, on a real Redis with BullMQ and a job runner of the test's own: a task-augmented
 * `tools/call` (MCP 2025-11-25 tasks) becomes a job — tasks/get, tasks/result, tasks/cancel, tasks/list — over Streamable
 * HTTP and over the legacy SSE transport; a client without tasks gets the job id and pages through the text with
 * `get_extraction`; a call waiting for a job reports each page read.
 */

withStore("redis");

const PAGES = 80;
/** Scanned pages (no text layer: OCR runs on them); the others carry a text layer. */
const SCANNED = [10, 30, 50, 70];
/** Text pages far longer than a slice of the `get_extraction` test, so that a page is cut and continued. */
const LONG_PAGES = new Set([3, 41, 77]);

interface LongDocument {
  pdf: Uint8Array;
  base64: string;
  /** Page number → what its text must contain (text pages) or be close to (scanned pages). */
  marker: Map<number, string>;
  scanTruth: Map<number, string>;
}

async function longMixedPdf(): Promise<LongDocument> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const scan = await longScan(SCANNED.length);
  const scanDoc = await PDFDocument.load(scan.pdf);
  const marker = new Map<number, string>();
  const scanTruth = new Map<number, string>();
  for (let n = 1; n <= PAGES; n++) {
    const scanned = SCANNED.indexOf(n);
    if (scanned >= 0) {
      const [copied] = await doc.copyPages(scanDoc, [scanned]);
      doc.addPage(copied!);
      scanTruth.set(n, scan.truth[scanned]!);
      continue;
    }
    const page = doc.addPage([612, 792]);
    const lines = [`Marker page ${n} of ${PAGES}`];
    const count = LONG_PAGES.has(n) ? 60 : 8;
    for (let line = 0; line < count; line++)
      lines.push(`Line ${line + 1} of page ${n}: the quick brown fox jumps over the lazy dog again`);
    lines.forEach((text, index) => page.drawText(text, { x: 40, y: 760 - index * 11.5, size: 9, font }));
    marker.set(n, `Marker page ${n} of ${PAGES}`);
  }
  const pdf = await doc.save();
  return { pdf, base64: Buffer.from(pdf).toString("base64"), marker, scanTruth };
}

/** The text of every page of `text` (plain text: pages separated by a form feed) checked against the document. */
function expectPagesRead(text: string, document: LongDocument): void {
  const pages = text.split("\f");
  expect(pages).toHaveLength(PAGES);
  for (const [number, marker] of document.marker) expect(pages[number - 1], `page ${number}`).toContain(marker);
  for (const [number, truth] of document.scanTruth) {
    expect(characterErrorRate(pages[number - 1]!, truth), `page ${number}: ${pages[number - 1]}`).toBeLessThan(0.1);
  }
}

const pool = createTestPool();
let runner: JobRunner;
let document: LongDocument;

beforeAll(async () => {
  document = await longMixedPdf();
  runner = startTestRunner("mcp-tasks", pool);
}, 120_000);
afterAll(async () => {
  await runner.stop();
  await resetWorkQueue();
  await pool.terminate();
});

const route = createMcpRoute({ progressIntervalMs: 100, jobPollMs: 100, sse: { pingMs: 60_000 } });
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close().catch(() => undefined)));
});

type Transport = "streamable" | "sse";

/** Another instance of the route: it shares only the store with `route` (two serverless instances). */
const otherInstance = createMcpRoute({ jobPollMs: 100, sse: { pingMs: 60_000 } });

/** An SDK v1 client (the SDK with the tasks client API), connected to the route in process. */
async function taskClient(account: TestAccount, transport: Transport, handlers: Handlers = route): Promise<ClientV1> {
  const { url, headers } = keyCarrier(account.key);
  const fetch = routeFetch(handlers);
  const client = new ClientV1({ name: "ocr-task-tests", version: "1.0.0" });
  await client.connect(
    transport === "sse"
      ? new SseV1(url, { fetch, requestInit: { headers } })
      : new StreamableV1(url, { fetch, requestInit: { headers } }),
  );
  open.push(client);
  return client;
}

const extractArgs = () => ({
  name: "extract_text",
  arguments: { image_source: { type: "base64", data: document.base64, filename: "long.pdf" } },
});

async function createTask(client: ClientV1): Promise<Task> {
  const created = await client.request({ method: "tools/call", params: extractArgs() }, CreateTaskResultSchema, {
    task: { ttl: 60_000 },
  });
  return created.task;
}

async function pollUntilEnded(client: ClientV1, taskId: string): Promise<Task[]> {
  const seen: Task[] = [];
  const deadline = Date.now() + 150_000;
  for (;;) {
    const task = await client.experimental.tasks.getTask(taskId);
    seen.push(task);
    if (!["working", "input_required"].includes(task.status)) return seen;
    if (Date.now() > deadline) throw new Error(`task ${taskId} still ${task.status}: ${task.statusMessage}`);
    // Faster than the pollInterval the task suggests: the test has nothing else to do.
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function rpcErrorOf(work: Promise<unknown>): Promise<McpError> {
  try {
    await work;
  } catch (error) {
    if (error instanceof McpError) return error;
    throw error;
  }
  throw new Error("expected a JSON-RPC error");
}

describe.each(["streamable", "sse"] as const)("tasks over %s", (transport) => {
  it("announces tasks and a tool that may run as one", async () => {
    const account = await createAccount(0);
    const client = await taskClient(account, transport);
    expect(client.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => [tool.name, tool.execution?.taskSupport])).toEqual([
      ["extract_text", "optional"],
      ["get_extraction", undefined],
      ["show_extraction", undefined],
      ["read_viewer_page", undefined],
    ]);
  });

  it("a task-augmented tools/call on an 80-page PDF: the task, tasks/get until completed, tasks/result with the text; credits per page", async () => {
    const account = await createAccount(100);
    const client = await taskClient(account, transport);
    const task = await createTask(client);
    expect(task).toMatchObject({ taskId: expect.stringMatching(/^job_/), status: "working" });
    expect(Date.parse(task.createdAt)).not.toBeNaN();
    expect(task.ttl).toBeGreaterThan(0);
    // Every page reserved at once.
    expect(await account.balance()).toBe(100 - PAGES);

    const seen = await pollUntilEnded(client, task.taskId);
    const final = seen.at(-1)!;
    expect(final).toMatchObject({
      taskId: task.taskId,
      status: "completed",
      statusMessage: `Done: ${PAGES} of ${PAGES} pages read`,
    });
    expect(final.pollInterval).toBeUndefined();

    // The result from another instance: the task is the job, in the store.
    const elsewhere = await taskClient(account, transport, otherInstance);
    const reports: ProgressReport[] = [];
    const result = await elsewhere.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, {
      onprogress: (report) => reports.push(report),
    });
    expect(result._meta).toEqual({ "io.modelcontextprotocol/related-task": { taskId: task.taskId } });
    expect(result.isError ?? false).toBe(false);
    const body = extractTextOutputSchema.strict().parse(result.structuredContent);
    expect(result.content).toEqual([{ type: "text", text: body.extractedText }]);
    expect(body).toMatchObject({
      userId: account.userId,
      inputSource: "base64",
      pageCount: PAGES,
      creditsUsed: PAGES,
      requestId: task.taskId,
    });
    expect(body.job).toEqual({
      jobId: task.taskId,
      status: "succeeded",
      pagesTotal: PAGES,
      pagesDone: PAGES,
      pagesFailed: 0,
    });
    expectPagesRead(body.extractedText, document);
    // Nothing to wait for: at most one notification, the pages already read.
    expect(reports.length).toBeLessThanOrEqual(1);
    for (const report of reports) expect(report).toMatchObject({ progress: PAGES, total: PAGES });
    expect(await account.balance()).toBe(100 - PAGES);

    // get_extraction reads the same job (the task id is its id), on this transport too.
    const slice = getExtractionOutputSchema
      .strict()
      .parse(
        toolResultSchema.parse(
          await client.callTool({ name: "get_extraction", arguments: { job_id: task.taskId, max_chars: 5_000 } }),
        ).structuredContent,
      );
    expect(slice).toMatchObject({ jobId: task.taskId, status: "succeeded", offset: 0, nextCursor: expect.any(String) });
    expect(slice.text.length).toBeLessThanOrEqual(5_000);
    expect(body.extractedText.startsWith(slice.text)).toBe(true);

    // The task is in tasks/list; an ended task cannot be cancelled; an unknown one is -32602.
    const listed = await client.experimental.tasks.listTasks();
    expect(listed.tasks.map((item) => item.taskId)).toContain(task.taskId);
    expect((await rpcErrorOf(client.experimental.tasks.cancelTask(task.taskId))).code).toBe(-32602);
    const unknown = await rpcErrorOf(client.experimental.tasks.getTask("job_AAAAAAAAAAAAAAAAAAAAAA"));
    expect(unknown.code).toBe(-32602);
    expect(unknown.message).toMatch(/No job/);
  }, 180_000);

  it("tasks/cancel: the task is cancelled, the pages not read are refunded, and tasks/result says so", async () => {
    const account = await createAccount(100);
    const client = await taskClient(account, transport);
    const task = await createTask(client);
    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled).toMatchObject({ taskId: task.taskId, status: "cancelled" });
    const status = await client.experimental.tasks.getTask(task.taskId);
    expect(status.status).toBe("cancelled");
    // What was read before the cancel is paid; the rest came back.
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    const text = z.object({ text: z.string() }).parse(result.content[0]).text;
    expect(text).toMatch(
      /^cancelled: Job job_\S+ was cancelled: (\d+) of 80 pages had been read \(charged\), (\d+) credits? refunded\./,
    );
    const [, read, refunded] = /(\d+) of 80 pages had been read \(charged\), (\d+) credit/.exec(text)!;
    expect(Number(read) + Number(refunded)).toBe(PAGES);
    expect(await account.balance()).toBe(100 - Number(read));
    // Cancelling again: already in a terminal status.
    expect((await rpcErrorOf(client.experimental.tasks.cancelTask(task.taskId))).code).toBe(-32602);
  }, 120_000);

  it(
    transport === "sse"
      ? "tasks/result on a task still working at the end of the call's budget: -32603, keep polling"
      : "tasks/result outlasts the call's budget: the stream ends, the SDK reconnects (Last-Event-ID), and getTaskResult gets the result",
    async () => {
      await runner.stop();
      const account = await createAccount(100);
      const short = createMcpRoute({ toolDeadlineMs: 4_000, jobPollMs: 100, sse: { pingMs: 60_000 } });
      let resumes = 0;
      const handlers: Handlers = {
        POST: short.POST,
        GET: (req) => {
          if (req.headers.has("last-event-id")) resumes += 1;
          return short.GET(req);
        },
      };
      let restarted = false;
      const restart = () => {
        if (restarted) return;
        restarted = true;
        runner = startTestRunner(`mcp-tasks-${transport}`, pool);
      };
      try {
        const client = await taskClient(account, transport, handlers);
        const task = await createTask(client);
        if (transport === "sse") {
          const error = await rpcErrorOf(client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema));
          expect(error.code).toBe(-32603);
          expect(error.message).toMatch(
            /is still working \(Queued: 80 pages to read\) at the end of this call's time: poll tasks\/get/,
          );
          await client.experimental.tasks.cancelTask(task.taskId);
          expect(await account.balance()).toBe(100);
          return;
        }
        const reports: ProgressReport[] = [];
        const pending = client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, {
          timeout: 150_000,
          onprogress: (report) => reports.push(report),
        });
        // No page is read before the first stream's budget (4 s) has ended: the answer needs a reconnect.
        await new Promise((resolve) => setTimeout(resolve, 5_000));
        expect(resumes).toBeGreaterThanOrEqual(1);
        restart();
        const result = await pending;
        expect(result._meta).toEqual({ "io.modelcontextprotocol/related-task": { taskId: task.taskId } });
        expectPagesRead(extractTextOutputSchema.parse(result.structuredContent).extractedText, document);
        // The pages reported across the streams: each once, in order, up to the last.
        expectPageProgress(reports);
        expect(await account.balance()).toBe(100 - PAGES);
      } finally {
        restart();
      }
    },
    180_000,
  );

  it("tasks/result waits for the task and reports each page read, in order", async () => {
    const account = await createAccount(100);
    const client = await taskClient(account, transport);
    const task = await createTask(client);
    const reports: ProgressReport[] = [];
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, {
      onprogress: (report) => reports.push(report),
      resetTimeoutOnProgress: true,
      timeout: 60_000,
    });
    expectPagesRead(extractTextOutputSchema.parse(result.structuredContent).extractedText, document);
    expectPageProgress(reports);
  }, 180_000);
});

/**
 * Per-page progress: `progress` counts pages, rises with every notification, `total` is the job's pages; the last one
 * is `last` (default: every page).
 */
function expectPageProgress(reports: ProgressReport[], last = PAGES): void {
  for (const [index, report] of reports.entries()) {
    if (index > 0) expect(report.progress).toBeGreaterThan(reports[index - 1]!.progress);
  }
  const pages = reports.filter((report) => report.total !== undefined);
  if (last === 0) {
    expect(pages).toEqual([]);
    return;
  }
  expect(pages.length).toBeGreaterThan(0);
  for (const report of pages) {
    expect(report.total).toBe(PAGES);
    expect(report.message).toBe(`Read ${report.progress} of ${PAGES} pages`);
  }
  // One notification per page from the first one reported: consecutive numbers, up to the last page.
  const numbers = pages.map((report) => report.progress);
  expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, index) => numbers[0]! + index));
  expect(numbers.at(-1)).toBe(last);
}

describe("an SDK client's standalone GET", () => {
  // Issue 39: the SDK opens its optional standalone stream after `initialized`. Taken for a legacy SSE session, that
  // GET got a stream with `retry: 300000`, closed unused and was reopened: the SDK keeps the last `retry:` it saw for
  // every reconnect, so the resume of a `tasks/result` stream past the call's budget waited five minutes for a job that
  // had long ended. Now that GET is `405` (the spec's "no standalone stream") and the resume comes within a second.
  it("is 405, and getTaskResult answers soon after the job ends, across a resume", async () => {
    await runner.stop();
    const account = await createAccount(100);
    // The task is created by another client, with the usual budget (it inspects the 80-page PDF: seconds when busy).
    const task = await createTask(await taskClient(account, "streamable"));
    const short = createMcpRoute({
      toolDeadlineMs: 5_000,
      jobPollMs: 100,
      // A legacy stream that goes unused closes after 1.5 s (10 s on a real server) and the SDK reopens it: after the
      // tasks/result stream's `retry: 500`, so its own `retry: 300000` is the last one the SDK saw.
      sse: { pingMs: 60_000, unusedMs: 1_500 },
    });
    const gets: { versioned: boolean; resume: boolean; status: number }[] = [];
    const handlers: Handlers = {
      POST: short.POST,
      GET: async (req) => {
        const response = await short.GET(req);
        gets.push({
          versioned: req.headers.has("mcp-protocol-version"),
          resume: req.headers.has("last-event-id"),
          status: response.status,
        });
        return response;
      },
    };
    let restarted = false;
    const restart = () => {
      if (restarted) return;
      restarted = true;
      runner = startTestRunner("mcp-tasks-standalone", pool);
    };
    try {
      const client = await taskClient(account, "streamable", handlers);
      const pending = client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: 400_000 });
      pending.catch(() => undefined);
      // The first tasks/result stream ends at the budget (5 s) with no page read: its answer needs a resume.
      const waitedFrom = Date.now();
      while (!gets.some((get) => get.resume) && Date.now() - waitedFrom < 10_000)
        await new Promise((resolve) => setTimeout(resolve, 100));
      restart();
      await pollUntilEnded(client, task.taskId);
      const ended = Date.now();
      // Generous: the resume's delay is the stream's `retry: 500`; before the fix it was five minutes.
      const result = await Promise.race([
        pending,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error("getTaskResult did not answer within 30 s of the job's end")), 30_000),
        ),
      ]);
      expect(Date.now() - ended).toBeLessThan(30_000);
      expect(result._meta).toEqual({ "io.modelcontextprotocol/related-task": { taskId: task.taskId } });
      expectPagesRead(extractTextOutputSchema.parse(result.structuredContent).extractedText, document);
      // The standalone GET (versioned, no Last-Event-ID) was refused, once: no legacy session was opened for it.
      const standalone = gets.filter((get) => !get.resume);
      expect(standalone.length).toBeGreaterThanOrEqual(1);
      expect(
        standalone.every((get) => get.versioned && get.status === 405),
        JSON.stringify(gets),
      ).toBe(true);
      expect(gets.filter((get) => get.resume).every((get) => get.status === 200)).toBe(true);
    } finally {
      restart();
    }
  }, 180_000);
});

describe("rate limits", () => {
  it("polling a task counts against the key's reads (ten times RATE_LIMIT_PER_MINUTE), other messages against its requests", async () => {
    const account = await createAccount(0);
    const read = await route.POST(
      rpcRequest(
        { jsonrpc: "2.0", id: 1, method: "tasks/get", params: { taskId: "job_AAAAAAAAAAAAAAAAAAAAAA" } },
        { key: account.key },
      ),
    );
    expect(read.status).toBe(200);
    expect(read.headers.get("ratelimit-limit")).toBe("600");
    const slice = await route.POST(
      rpcRequest(
        {
          jsonrpc: "2.0",
          id: 2,
          method: "tools/call",
          params: { name: "get_extraction", arguments: { job_id: "job_AAAAAAAAAAAAAAAAAAAAAA" } },
        },
        { key: account.key },
      ),
    );
    expect(slice.headers.get("ratelimit-limit")).toBe("600");
    const list = await route.POST(rpcRequest({ jsonrpc: "2.0", id: 3, method: "tools/list" }, { key: account.key }));
    expect(list.headers.get("ratelimit-limit")).toBe("60");
    jsonRpcResultSchema.parse(await list.json());
    // A batch with one message that does work counts as a request.
    const mixed = await route.POST(
      rpcRequest(
        [
          { jsonrpc: "2.0", id: 4, method: "tasks/list" },
          { jsonrpc: "2.0", id: 5, method: "tools/list" },
        ],
        { key: account.key },
      ),
    );
    expect(mixed.headers.get("ratelimit-limit")).toBe("60");
  });
});

describe("a task with output_format pdf", () => {
  it("its result is the plain text, and names the route of the PDF file", async () => {
    const account = await createAccount(10);
    const client = await taskClient(account, "streamable");
    const created = await client.request(
      {
        method: "tools/call",
        params: {
          name: "extract_text",
          arguments: { image_source: { type: "base64", data: base64Of("born-digital.pdf") }, output_format: "pdf" },
        },
      },
      CreateTaskResultSchema,
      { task: {} },
    );
    await pollUntilEnded(client, created.task.taskId);
    const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    const body = extractTextOutputSchema.strict().parse(result.structuredContent);
    expect(body.extractedText).not.toMatch(/^JVBER/);
    expect(body.extractedText.length).toBeGreaterThan(20);
    expect(result.content).toEqual([
      { type: "text", text: body.extractedText },
      { type: "text", text: expect.stringContaining(`GET /api/ocr/jobs/${created.task.taskId}/result?format=pdf`) },
    ]);
    const slice = getExtractionOutputSchema.parse(
      toolResultSchema.parse(
        await client.callTool({ name: "get_extraction", arguments: { job_id: created.task.taskId } }),
      ).structuredContent,
    );
    expect(slice).toMatchObject({ format: "text", text: body.extractedText });
    expect(slice.nextCursor).toBeUndefined();
  }, 120_000);
});

describe("a task whose job is refused", () => {
  it("no credits for its pages: no task, the tool error the call would get (nothing reserved)", async () => {
    const account = await createAccount(3);
    const response = await route.POST(
      rpcRequest(
        { jsonrpc: "2.0", id: 7, method: "tools/call", params: { ...extractArgs(), task: { ttl: 60_000 } } },
        { key: account.key },
      ),
    );
    const result = toolResultSchema.parse(jsonRpcResultSchema.parse(await response.json()).result);
    expect(result).not.toHaveProperty("task");
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toMatch(
      /^insufficient_credits: Insufficient credits: this job needs 80 credits \(80 pages\) and the balance is 3\./,
    );
    expect(await account.balance()).toBe(3);
  });
});

describe("clients without tasks", () => {
  // A synchronous call reads at most MAX_PDF_PAGES pages of work (a text-layer page counts a tenth): 5 makes the
  // 80-page document (4 scanned pages and 76 with text, 11.6 pages of work) too long for one call. Paging through it
  // 1,500 characters at a time takes more calls than the 60 requests a minute a key may send: they count as reads.
  let restore: () => void;
  beforeAll(() => {
    restore = setEnv({ MAX_PDF_PAGES: "5" });
  });
  afterAll(() => restore());

  it("extract_text on a long PDF waits for its job with per-page progress, then answers with its text", async () => {
    const account = await createAccount(100);
    const client = await connectClient({ kind: "v2 streamable", key: account.key, posts: route });
    open.push(client);
    const reports: ProgressReport[] = [];
    const result = toolResultSchema.parse(
      await (client as unknown as { callTool(params: unknown, options: unknown): Promise<unknown> }).callTool(
        extractArgs(),
        {
          onprogress: (report: ProgressReport) => reports.push(report),
          resetTimeoutOnProgress: true,
          timeout: 60_000,
        },
      ),
    );
    const body = extractTextOutputSchema.strict().parse(result.structuredContent);
    const job = body.job!;
    expect(job.jobId).toMatch(/^job_/);
    // Each page read while the call waited was reported, in order, up to where the job stood at the answer.
    expectPageProgress(reports, job.pagesDone + job.pagesFailed);
    if (job.status === "succeeded") {
      // At most max_chars (20 000) in the answer; its cursor reads on (free), and the pieces make the whole text.
      expect(body.extractedText.length).toBeLessThanOrEqual(20_000);
      const pieces = [body.extractedText];
      let cursor = job.nextCursor;
      const offsets = [0];
      while (cursor !== undefined) {
        const slice = getExtractionOutputSchema.parse(
          toolResultSchema.parse(await client.callTool({ name: "get_extraction", arguments: { cursor } }))
            .structuredContent,
        );
        pieces.push(slice.text);
        offsets.push(slice.offset);
        cursor = slice.nextCursor;
      }
      expectPagesRead(
        pieces.map((piece, index) => (index > 0 && offsets[index] === 0 ? "\f" : "") + piece).join(""),
        document,
      );
      expect(await account.balance()).toBe(100 - PAGES);
    } else {
      // A machine too busy to read 80 pages within the call's 28 s: the answer names the job and the next step.
      // The answer holds the pages read so far (if any); its last line gives the exact next call.
      expect(result.content.at(-1)!.text).toMatch(/Call get_extraction with/);
    }
  }, 180_000);

  it("a call that ends before its job: the job id and the next step; get_extraction pages through the text within max_chars", async () => {
    // No runner reads the queue until the first answers are in: the call's budget ends while its job waits.
    await runner.stop();
    const shortRoute = createMcpRoute({ toolDeadlineMs: 5_000, jobPollMs: 100 });
    const account = await createAccount(100);
    const client = await connectClient({ kind: "v1 streamable", key: account.key, posts: shortRoute });
    open.push(client);
    let jobId: string;
    try {
      const first = toolResultSchema.parse(await client.callTool(extractArgs()));
      expect(first.isError ?? false, JSON.stringify(first.content).slice(0, 300)).toBe(false);
      const started = extractTextOutputSchema.strict().parse(first.structuredContent);
      expect(started).toMatchObject({ extractedText: "", creditsUsed: 0, pageCount: PAGES });
      // Nothing read yet: no text, and the cursor where the reading will start.
      expect(started.job).toEqual({
        jobId: expect.stringMatching(/^job_/),
        status: "queued",
        pagesTotal: PAGES,
        pagesDone: 0,
        pagesFailed: 0,
        nextCursor: expect.any(String),
      });
      jobId = started.job!.jobId;
      expect(first.content).toEqual([
        {
          type: "text",
          text: expect.stringMatching(
            new RegExp(
              `^This document is more than one call reads \\(.*\\)\\. It is being read as job ${jobId}: Queued: 80 pages to read\\. Call get_extraction with \\{"job_id": "${jobId}"\\}`,
            ),
          ),
        },
      ]);
      // Every page reserved at submission.
      expect(await account.balance()).toBe(100 - PAGES);
      // Nothing read yet: no text, and a cursor at the first page.
      const waiting = toolResultSchema.parse(
        await client.callTool({ name: "get_extraction", arguments: { job_id: jobId } }),
      );
      const empty = getExtractionOutputSchema.strict().parse(waiting.structuredContent);
      expect(empty).toMatchObject({
        jobId,
        status: "queued",
        pages: "",
        text: "",
        offset: 0,
        pagesDone: 0,
        nextCursor: expect.any(String),
      });
      expect(waiting.content).toEqual([
        { type: "text", text: expect.stringMatching(/no page of this selection is ready yet.*in a few seconds\.\]$/) },
      ]);
    } finally {
      runner = startTestRunner("mcp-tasks-2", pool);
    }

    const MAX = 1_500;
    const slices: z.infer<typeof getExtractionOutputSchema>[] = [];
    let cursor: string | undefined;
    const deadline = Date.now() + 150_000;
    for (;;) {
      const answer = toolResultSchema.parse(
        await client.callTool({
          name: "get_extraction",
          arguments: { job_id: jobId, max_chars: MAX, ...(cursor && { cursor }) },
        }),
      );
      expect(answer.isError ?? false, JSON.stringify(answer.content).slice(0, 300)).toBe(false);
      const slice = getExtractionOutputSchema.strict().parse(answer.structuredContent);
      expect(slice.text.length).toBeLessThanOrEqual(MAX);
      expect(answer.content.at(-1)!.text).toMatch(new RegExp(`^\\[job ${jobId}: `));
      if (slice.text !== "") {
        expect(answer.content[0]).toEqual({ type: "text", text: slice.text });
        slices.push(slice);
      }
      if (slice.nextCursor === undefined) break;
      if (slice.text === "") {
        // Nothing ready yet at the cursor: the same cursor comes back.
        if (Date.now() > deadline) throw new Error("the job did not finish in time");
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      cursor = slice.nextCursor;
    }
    // Every page in order, none twice; the long pages cut and continued at the next call.
    const cut = slices.filter((slice) => slice.offset > 0);
    expect(cut.length).toBeGreaterThanOrEqual(LONG_PAGES.size);
    const whole = slices.map((slice, index) => (index > 0 && slice.offset === 0 ? "\f" : "") + slice.text).join("");
    expect(slices.at(-1)!.status).toBe("succeeded");
    const full = await readJobResult(getStore(), getEnv(), services().deliveries, account.userId, jobId, {});
    expect(whole).toBe(full.extractedText);
    expectPagesRead(whole, document);

    // Pages asked for: only those, still within max_chars.
    const some = getExtractionOutputSchema.parse(
      toolResultSchema.parse(
        await client.callTool({ name: "get_extraction", arguments: { job_id: jobId, pages: "5-6" } }),
      ).structuredContent,
    );
    expect(some).toMatchObject({ pages: "5-6", offset: 0, status: "succeeded" });
    expect(some.nextCursor).toBeUndefined();
    expect(some.text.split("\f")[0]).toContain("Marker page 5 of 80");

    // A bad cursor or another account's job: tool errors the model can act on.
    const bad = toolResultSchema.parse(
      await client.callTool({ name: "get_extraction", arguments: { job_id: jobId, cursor: "nope" } }),
    );
    expect(bad.isError).toBe(true);
    expect(bad.content[0]!.text).toMatch(/^invalid_request: cursor/);
    const other = await createAccount(0);
    const stranger = await connectClient({ kind: "v1 streamable", key: other.key, posts: shortRoute });
    open.push(stranger);
    const foreign = toolResultSchema.parse(
      await stranger.callTool({ name: "get_extraction", arguments: { job_id: jobId } }),
    );
    expect(foreign.isError).toBe(true);
    expect(foreign.content[0]!.text).toMatch(/^not_found: /);
    expect(await account.balance()).toBe(100 - PAGES);
  }, 180_000);
});
