import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { JobRunner, resetWorkQueue } from "@/lib/jobs";
import { createMcpRoute } from "@/lib/mcp";
import { extractTextOutputSchema, getExtractionOutputSchema } from "@/lib/mcp/jobs";
import { longScan } from "@/scripts/make-fixtures";
import { createAccount, expectLedgerConsistent, setEnv, withStore } from "../api/support";
import { createTestPool } from "../support/ocr";
import { connectClient, toolResultSchema, type McpClient } from "./support";
import { startTestRunner } from "../support/jobs";

/*
 * Issue 30: an MCP client without tasks reads a 12-page scanned PDF end to end — `extract_text`, then `get_extraction`
 * with the exact call each answer gives — over Streamable HTTP and over the legacy SSE transport. The document is more
 * than one call reads (here `MAX_PDF_PAGES` = 4 stands for "more work than one call's budget"), so it is read as a
 * job; the answers hold the text read so far and the cursor that reads on. The text meets a CER bound, every page is
 * charged once. Real Redis, BullMQ, engine processes and the official SDK clients.
 */

withStore("redis");

const PAGES = 12;
const pool = createTestPool();
let runner: JobRunner;
let scan: { pdf: Uint8Array; truth: string[] };
let restore: () => void;

beforeAll(async () => {
  scan = await longScan(PAGES);
  restore = setEnv({ MAX_PDF_PAGES: "4" });
  runner = startTestRunner("scan-without-tasks", pool);
}, 60_000);
afterAll(async () => {
  restore();
  await runner.stop();
  await resetWorkQueue();
  await pool.terminate();
});

// A short call budget (under 7 s of waiting for the job): the answer comes before the job ends, get_extraction reads on.
const route = createMcpRoute({ toolDeadlineMs: 10_000, jobPollMs: 100, sse: { pingMs: 60_000 } });
const clients: McpClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
});

/** The `{"job_id": …, "cursor": …}` (or `{"job_id": …}`) of the exact next call an answer's last line gives. */
function nextCall(text: string): Record<string, string> {
  const match = /get_extraction (?:with )?(\{[^}]*\})/.exec(text);
  expect(match, text).not.toBeNull();
  return JSON.parse(match![1]!) as Record<string, string>;
}

describe.each(["v2 streamable", "v1 sse"] as const)("%s, a client without tasks", (kind) => {
  it("reads a 12-page scan through extract_text and get_extraction: the text within a CER bound, credits = pages read", async () => {
    const account = await createAccount(50);
    const client = await connectClient({ kind, key: account.key, posts: route });
    clients.push(client);
    const started = Date.now();
    let calls = 1;
    const first = toolResultSchema.parse(
      await client.callTool({
        name: "extract_text",
        arguments: {
          image_source: { type: "base64", data: Buffer.from(scan.pdf).toString("base64"), filename: "scan.pdf" },
        },
      }),
    );
    expect(first.isError ?? false, JSON.stringify(first.content).slice(0, 300)).toBe(false);
    const body = extractTextOutputSchema.strict().parse(first.structuredContent);
    const jobId = body.job!.jobId;
    expect(
      body.job!.status === "succeeded" || first.content.at(-1)!.text!.includes(`It is being read as job ${jobId}`),
    ).toBe(true);
    const pieces: { text: string; offset: number }[] =
      body.extractedText === "" ? [] : [{ text: body.extractedText, offset: 0 }];
    let next = body.job!.nextCursor === undefined ? null : nextCall(first.content.at(-1)!.text!);
    while (next !== null) {
      calls += 1;
      const answer = toolResultSchema.parse(await client.callTool({ name: "get_extraction", arguments: next }));
      expect(answer.isError ?? false, JSON.stringify(answer.content).slice(0, 300)).toBe(false);
      const slice = getExtractionOutputSchema.strict().parse(answer.structuredContent);
      expect(slice.jobId).toBe(jobId);
      if (slice.text !== "") pieces.push({ text: slice.text, offset: slice.offset });
      if (slice.nextCursor === undefined) break;
      // The exact call the answer gives; nothing new yet: the model is told to come back in a few seconds.
      next = nextCall(answer.content.at(-1)!.text!);
      if (slice.text === "") await new Promise((resolve) => setTimeout(resolve, 500));
      expect(Date.now() - started).toBeLessThan(150_000);
    }
    const text = pieces.map((piece, index) => (index > 0 && piece.offset === 0 ? "\f" : "") + piece.text).join("");
    const pages = text.split("\f");
    expect(pages).toHaveLength(PAGES);
    pages.forEach((page, index) =>
      expect(characterErrorRate(page, scan.truth[index]!), `page ${index + 1}: ${page}`).toBeLessThan(0.1),
    );
    expect(await account.balance()).toBe(50 - PAGES);
    await expectLedgerConsistent(account);
    console.info(
      `[12-page scan, ${kind}] ${Date.now() - started} ms, ${calls} calls (1 extract_text), ${50 - (await account.balance())} credits`,
    );
  }, 180_000);
});
