import { randomBytes } from "node:crypto";
import { PDFDocument } from "pdf-lib";
import { describe, expect, it } from "vitest";
import { getEnv } from "@/lib/env";
import { z } from "zod";
import * as mcpRoute from "@/app/api/mcp/route";
import * as resultRoute from "@/app/api/ocr/jobs/[id]/result/route";
import { jobResultSchema } from "@/lib/api/schemas";
import { encodePage } from "@/lib/jobs/payload";
import { getStore } from "@/lib/store";
import { createAccount, expectApiError, withStore, type TestAccount } from "../api/support";
import { deleteKeysWithPrefix, waitForWindowRoom } from "../support/redis";
import { createMcpRoute, type McpRoute } from "@/lib/mcp";

/*
 * Issue 29, point 3: reads that cost the server far more than the caller. An ended job's result is rendered once and
 * kept in the store, every later read streamed from there (proved by taking away what it was rendered from); every
 * message of an MCP batch counts against the key's limits, reads against its reads.
 */

withStore("redis");

const BASE = "http://localhost:3000";

/** A job that read `pages` pages of text and ended, made in the store as the runner leaves one (no engine needed). */
async function endedJob(
  account: TestAccount,
  pages: number,
  source: { bytes: Uint8Array; type: "pdf" | "png" } = { bytes: new Uint8Array(8), type: "png" },
): Promise<string> {
  const jobs = getStore().jobs;
  const jobId = `job_${randomBytes(16).toString("base64url")}`;
  const now = Date.now();
  const day = new Date(now).toISOString().slice(0, 10);
  const putResult = await jobs.putSource(jobId, source.bytes, {
    chunkBytes: 1024 * 1024,
    pendingTtlMs: 600_000,
    userId: account.userId,
    maxAccountBytes: Number.MAX_SAFE_INTEGER,
  });
  if (!putResult.ok) throw new Error("the account's job files are full");
  const sourceChunks = putResult.chunks;
  const created = await jobs.createJob(
    {
      id: jobId,
      userId: account.userId,
      requestId: jobId,
      createdAt: now,
      deadline: now + 600_000,
      expiresAt: now + 1_200_000,
      fileType: source.type,
      inputSource: "base64",
      bytes: source.bytes.byteLength,
      sourceChunks,
      pageCount: pages,
      selection: `1-${pages}`,
      pagesTotal: pages,
      creditsReserved: pages,
      format: "text",
      language: "eng",
    },
    {
      entry: {
        id: `led_${randomBytes(8).toString("hex")}`,
        at: new Date(now).toISOString(),
        reason: "ocr",
        requestId: jobId,
      },
      day,
      maxQueuedPages: 1_000,
      ttlMs: 600_000,
    },
  );
  expect(created.ok).toBe(true);
  await jobs.startJob(jobId, now);
  const stored = Array.from({ length: pages }, (_, index) => {
    const text = `PAGE ${index + 1} TEXT`;
    const word = { text, confidence: 95, bbox: [0.1, 0.1, 0.5, 0.15] as [number, number, number, number] };
    const line = { ...word, words: [word] };
    const page = {
      number: index + 1,
      width: 612,
      height: 792,
      source: "ocr" as const,
      rotation: 0 as const,
      skew: 0,
      confidence: 95,
      text,
      blocks: [{ ...word, lines: [line] }],
      lineStyles: [],
    };
    return {
      page: index + 1,
      payload: encodePage({ page, language: { langs: ["eng"], auto: false }, readBy: "test", ms: 1 }),
    };
  });
  await jobs.storePages(jobId, stored, Date.now());
  await jobs.endJob(jobId, {
    end: "finish",
    now: Date.now(),
    resultTtlMs: 600_000,
    entry: {
      id: `led_${randomBytes(8).toString("hex")}`,
      at: new Date().toISOString(),
      reason: "refund",
      requestId: jobId,
    },
    day,
  });
  return jobId;
}

const read = (account: TestAccount, path: string) =>
  resultRoute.GET(new Request(`${BASE}${path}`, { headers: { "x-api-key": account.key } }));

describe("an ended job's result is rendered once, then read from the store", () => {
  it("text: the second read is the first's bytes, though the pages it was rendered from are gone", async () => {
    const account = await createAccount(10);
    const jobId = await endedJob(account, 3);
    const first = await read(account, `/api/ocr/jobs/${jobId}/result`);
    expect(first.status).toBe(200);
    const body = await first.text();
    expect(jobResultSchema.parse(JSON.parse(body))).toMatchObject({
      jobId,
      status: "succeeded",
      pages: "1-3",
      extractedText: "PAGE 1 TEXT\fPAGE 2 TEXT\fPAGE 3 TEXT",
    });
    expect(first.headers.get("content-length")).toBe(String(Buffer.byteLength(body)));
    // What a read would render from: taken away. A read that rendered again would find no page.
    await deleteKeysWithPrefix(`${getEnv().REDIS_PREFIX}job:${jobId}:pages`);
    const second = await read(account, `/api/ocr/jobs/${jobId}/result`);
    expect(second.status).toBe(200);
    expect(await second.text()).toBe(body);
    // Another format is another rendering (made now: its pages are gone, so they are missing).
    const hocr = jobResultSchema.parse(await (await read(account, `/api/ocr/jobs/${jobId}/result?format=hocr`)).json());
    expect(hocr.missingPages).toHaveLength(3);
  });

  it("pdf: made once from the source; later reads stream the kept file, though the source is gone", async () => {
    const account = await createAccount(10);
    const doc = await PDFDocument.create();
    doc.addPage([612, 792]).drawText("PAGE 1 TEXT", { x: 50, y: 700, size: 20 });
    const jobId = await endedJob(account, 1, { bytes: await doc.save(), type: "pdf" });
    const first = await read(account, `/api/ocr/jobs/${jobId}/result?format=pdf`);
    expect(first.status).toBe(200);
    const pdf = Buffer.from(await first.arrayBuffer());
    expect(pdf.subarray(0, 5).toString()).toBe("%PDF-");
    expect(first.headers.get("content-length")).toBe(String(pdf.byteLength));
    const record = (await getStore().jobs.getJob(jobId))!;
    await getStore().jobs.deleteSource(jobId, record.sourceChunks);
    const second = await read(account, `/api/ocr/jobs/${jobId}/result?format=pdf`);
    expect(second.status).toBe(200);
    expect(Buffer.from(await second.arrayBuffer()).equals(pdf)).toBe(true);
  });

  it("reads in flight at once render it once: 6 parallel reads answer the same bytes", async () => {
    const account = await createAccount(10);
    const jobId = await endedJob(account, 5);
    const bodies = await Promise.all(
      Array.from({ length: 6 }, async () => (await read(account, `/api/ocr/jobs/${jobId}/result?format=json`)).text()),
    );
    expect(new Set(bodies).size).toBe(1);
    expect(jobResultSchema.parse(JSON.parse(bodies[0]!))).toMatchObject({ pages: "1-5", missingPages: [] });
  });
});

describe("every message of an MCP batch counts against the key's limits", () => {
  const post = (account: TestAccount, body: unknown, route: Pick<McpRoute, "POST"> = mcpRoute) =>
    route.POST(
      new Request(`${BASE}/api/mcp`, {
        method: "POST",
        headers: {
          "x-api-key": account.key,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
        },
        body: JSON.stringify(body),
      }),
    );
  const results = (taskId: string, count: number) =>
    Array.from({ length: count }, (_, i) => ({
      jsonrpc: "2.0",
      id: i + 1,
      method: "tasks/result",
      params: { taskId },
    }));

  it("a batch of 5 tasks/result takes 5 reads; one of 30 with fewer left is 429, nothing taken", async () => {
    // An instance of the MCP route whose keys may read 20 times a minute (the constant is ten times the requests).
    const route = createMcpRoute({ settings: { keys: { readsPerMinute: 20 } } });
    await waitForWindowRoom(60_000, 3_000);
    const account = await createAccount(10);
    const jobId = await endedJob(account, 2);
    const answered = await post(account, results(jobId, 5), route);
    expect(answered.status).toBe(200);
    expect(answered.headers.get("ratelimit-limit")).toBe("20");
    expect(answered.headers.get("ratelimit-remaining")).toBe("15");
    const messages = z
      .array(z.object({ id: z.number(), result: z.object({ content: z.array(z.object({ text: z.string() })) }) }))
      .parse(await answered.json());
    expect(messages).toHaveLength(5);
    expect(messages[0]!.result.content[0]!.text).toContain("PAGE 2 TEXT");
    const limited = await post(account, results(jobId, 30), route);
    await expectApiError(limited, "rate_limited", /this batch has 30 messages/);
    // Its HTTP request counted once; the 29 others were refused, not taken.
    expect(limited.headers.get("ratelimit-remaining")).toBe("14");
  });
});
