import { readFileSync } from "node:fs";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { JobRunner, resetWorkQueue } from "@/lib/jobs";
import { extractTextOutputSchema } from "@/lib/mcp/jobs";
import { createMcpRoute } from "@/lib/mcp";
import { VIEWER_SCRIPT } from "@/lib/mcp/viewer/app-script";
import { VIEWER_HTML } from "@/lib/mcp/viewer/html";
import { VIEWER_URI } from "@/lib/mcp/viewer/tools";
import { needsReview, toPublicDocument, type ExtractedPage } from "@/lib/ocr/model/document";
import { createAccount, expectLedgerConsistent, withStore } from "../api/support";
import { startTestRunner } from "../support/jobs";
import { createTestPool } from "../support/ocr";
import { connectClient, keyCarrier, routeFetch, toolResultSchema, type McpClient } from "./support";
import { viewerDocument, viewerPageSchema, wordsOf, type ViewerPage } from "./viewer-support";

/*
 * Issue 42: the viewer (an MCP App) through our MCP route with the official SDK clients — its ui:// resource, the
 * tools that open it and feed it, a page's words and image drawn from the job's stored file (free), and another
 * account's job refused. Real Redis, BullMQ, engine processes.
 */

withStore("redis");

const pool = createTestPool();
let runner: JobRunner;
let pdf: Uint8Array;

beforeAll(async () => {
  pdf = await viewerDocument();
  runner = startTestRunner("viewer", pool);
}, 60_000);
afterAll(async () => {
  await runner.stop();
  await resetWorkQueue();
  await pool.terminate();
});

const route = createMcpRoute({ toolDeadlineMs: 20_000, jobPollMs: 100, sse: { pingMs: 60_000 } });
const clients: McpClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
});

async function client(key: string, kind: "v2 streamable" | "v1 sse" = "v2 streamable"): Promise<McpClient> {
  const connected = await connectClient({ kind, key, posts: route });
  clients.push(connected);
  return connected;
}

/** `read_viewer_page` until the page is read. */
async function readPage(mcp: McpClient, jobId: string, page: number): Promise<{ page: ViewerPage; image?: string }> {
  for (;;) {
    const result = toolResultSchema.parse(
      await mcp.callTool({ name: "read_viewer_page", arguments: { job_id: jobId, page } }),
    );
    expect(result.isError ?? false, JSON.stringify(result.content).slice(0, 300)).toBe(false);
    const parsed = viewerPageSchema.parse(result.structuredContent);
    if (parsed.pageStatus !== "pending") {
      const image = result.content.find((block) => block.type === "image") as { data?: string } | undefined;
      return { page: parsed, ...(image?.data !== undefined && { image: image.data }) };
    }
    // Not faster: the key's 60 requests a minute.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
  }
}

describe("review marks", () => {
  const word = (text: string, confidence: number, alternative?: string) => ({
    text,
    confidence,
    bbox: [0, 0, 0.1, 0.1] as [number, number, number, number],
    ...(alternative !== undefined && { alternative }),
  });
  const page = (source: "ocr" | "text-layer", words: ReturnType<typeof word>[]): ExtractedPage => ({
    number: 1,
    width: 100,
    height: 100,
    source,
    confidence: 80,
    text: "",
    blocks: [
      {
        text: "",
        confidence: 80,
        bbox: [0, 0, 1, 1],
        lines: [{ text: "", confidence: 80, bbox: [0, 0, 1, 1], words }],
      },
    ],
    lineStyles: [[{ size: 1 }]],
  });

  it("json words: low confidence or another reading is marked; punctuation and text layers are not", () => {
    const words = [
      word("TOTAL", 95),
      word("3.55", 41),
      word("Milk", 92, "Mik"),
      word("--", 10),
      word("EUR", 93, "EUR"),
    ];
    const [ocr] = toPublicDocument({ pages: [page("ocr", words)], pageCount: 1 }).pages;
    expect(ocr!.blocks[0]!.lines[0]!.words.map((w) => [w.text, w.review ?? false, w.alternative ?? null])).toEqual([
      ["TOTAL", false, null],
      ["3.55", true, null],
      ["Milk", true, "Mik"],
      ["--", false, null],
      ["EUR", false, "EUR"],
    ]);
    const [layer] = toPublicDocument({ pages: [page("text-layer", [word("faint", 0)])], pageCount: 1 }).pages;
    expect(layer!.blocks[0]!.lines[0]!.words[0]!.review).toBeUndefined();
  });
});

describe("the viewer", () => {
  it("the HTML carries the script built from app.js (node scripts/build-viewer.mjs)", () => {
    const source = readFileSync(new URL("../../lib/mcp/viewer/app.js", import.meta.url), "utf8");
    expect(VIEWER_SCRIPT).toBe(source);
  });

  it.each(["v2 streamable", "v1 sse"] as const)(
    "%s: lists the ui:// resource and the tools that carry it; the resource is self-contained",
    async (kind) => {
      const account = await createAccount(1);
      const mcp = await client(account.key, kind);
      const { tools } = await mcp.listTools();
      const byName = new Map(tools.map((tool) => [tool.name, tool as { _meta?: Record<string, unknown> }]));
      expect(byName.get("show_extraction")?._meta).toMatchObject({
        ui: { resourceUri: VIEWER_URI },
        "ui/resourceUri": VIEWER_URI,
      });
      expect(byName.get("read_viewer_page")?._meta).toMatchObject({
        ui: { resourceUri: VIEWER_URI, visibility: ["app"] },
      });
      // extract_text's answer is unchanged for hosts without MCP Apps: no ui on it.
      expect(byName.get("extract_text")?._meta).toBeUndefined();
    },
  );

  it("serves the resource as text/html;profile=mcp-app with a strict CSP and nothing from outside", async () => {
    const account = await createAccount(1);
    const { url, headers } = keyCarrier(account.key);
    const raw = new Client({ name: "viewer-test", version: "1.0.0" });
    await raw.connect(new StreamableHTTPClientTransport(url, { fetch: routeFetch(route), requestInit: { headers } }));
    try {
      const { resources } = await raw.listResources();
      expect(resources).toContainEqual(
        expect.objectContaining({ uri: VIEWER_URI, mimeType: "text/html;profile=mcp-app" }),
      );
      const read = await raw.readResource({ uri: VIEWER_URI });
      const [content] = read.contents as Array<{ uri: string; mimeType: string; text: string; _meta?: unknown }>;
      expect(content!.mimeType).toBe("text/html;profile=mcp-app");
      expect(content!.text).toBe(VIEWER_HTML);
      expect(content!._meta).toMatchObject({ ui: { csp: { connectDomains: [], resourceDomains: [] } } });
      expect(content!.text).toContain(`http-equiv="Content-Security-Policy"`);
      expect(content!.text).toMatch(/default-src 'none'/);
      expect(content!.text).not.toMatch(/(src|href)=["']?(https?:)?\/\//);
      expect(content!.text).not.toMatch(/unsafe-inline|unsafe-eval/);
    } finally {
      await raw.close();
    }
  });

  it("extract_text tells the model how many spans need a second look and where (issue 42), as show_extraction does", async () => {
    const account = await createAccount(10);
    const mcp = await client(account.key);
    const answer = toolResultSchema.parse(
      await mcp.callTool({
        name: "extract_text",
        arguments: { image_source: { type: "base64", data: Buffer.from(pdf).toString("base64") } },
      }),
    );
    expect(answer.isError ?? false, JSON.stringify(answer.content).slice(0, 300)).toBe(false);
    const body = extractTextOutputSchema.strict().parse(answer.structuredContent);
    // Read in the call (not a job): the answer is its text, then the review.
    expect(body.job).toBeUndefined();
    expect(body.creditsUsed).toBe(3);
    const review = body.review!;
    expect(review.spans).toBeGreaterThan(0);
    expect(review.words).toBeGreaterThanOrEqual(review.spans);
    expect(review.pagesChecked).toBe(3);
    // The poor print is on page 1: its spans come first, each placed on its page.
    expect(review.first[0]!.page).toBe(1);
    for (const span of review.first) expect(span.bbox.every((v) => v >= 0 && v <= 1)).toBe(true);
    expect(answer.content).toHaveLength(2);
    expect(answer.content[0]!.text).toBe(body.extractedText);
    const told = answer.content[1]!.text!;
    expect(told).toMatch(
      new RegExp(
        `^${review.spans} span\\(s\\) \\(${review.words} word\\(s\\)\\) on the 3 page\\(s\\) read need a second look`,
      ),
    );
    expect(told).toMatch(
      /- page 1: ".+" \(confidence \d+(, other reading ".+")?\) at \d+% from the top, \d+% from the left/,
    );
  }, 60_000);

  it("show_extraction reads a document as a job and the view's pages come free: words, review marks, a scaled image", async () => {
    const account = await createAccount(10);
    const mcp = await client(account.key);
    const shown = toolResultSchema.parse(
      await mcp.callTool({
        name: "show_extraction",
        arguments: { image_source: { type: "base64", data: Buffer.from(pdf).toString("base64") } },
      }),
    );
    expect(shown.isError ?? false, JSON.stringify(shown.content).slice(0, 300)).toBe(false);
    const jobId = String(shown.structuredContent!.jobId);
    expect(jobId).toMatch(/^job_/);
    expect(shown.content[0]!.text).toContain(`The viewer shows job ${jobId}`);

    const first = await readPage(mcp, jobId, 1);
    expect(first.page).toMatchObject({ page: 1, index: 1, count: 3, nextPage: 2, pageStatus: "done" });
    expect(first.page.previousPage).toBeUndefined();
    const words = wordsOf(first.page);
    expect(words.length).toBeGreaterThan(5);
    // The poor print has words to check; a word is marked exactly when its confidence is low for the page's reader
    // (or it has another reading).
    const marked = words.filter((word) => word.review);
    expect(marked.length, JSON.stringify(words.map((w) => [w.text, w.confidence]))).toBeGreaterThan(0);
    const engine = first.page.content?.engine;
    for (const word of words) expect(word.review === true, word.text).toBe(needsReview(word, engine));
    // The image: a JPEG at most 1000 px wide and 600 kB, drawn from the stored file.
    expect(first.page.image).toMatchObject({ mimeType: "image/jpeg" });
    expect(first.page.image!.width).toBeLessThanOrEqual(1000);
    const jpeg = Buffer.from(first.image!, "base64");
    expect(jpeg.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    expect(jpeg.byteLength).toBeLessThanOrEqual(600_000);

    const third = await readPage(mcp, jobId, 3);
    expect(third.page).toMatchObject({ page: 3, index: 3, previousPage: 2, pageStatus: "done" });
    expect(third.page.nextPage).toBeUndefined();
    expect(
      wordsOf(third.page)
        .map((w) => w.text)
        .join(" "),
    ).toMatch(/three/i);

    // The model is told how many spans need a second look and where, once the pages are read.
    const again = toolResultSchema.parse(
      await mcp.callTool({ name: "show_extraction", arguments: { job_id: jobId, page: 2 } }),
    );
    const review = again.structuredContent!.review as { words: number; spans: number; first: Array<{ page: number }> };
    expect(review.words).toBeGreaterThanOrEqual(marked.length);
    expect(review.first[0]!.page).toBe(1);
    expect(again.content[0]!.text).toMatch(/need a second look/);
    expect(again.content[0]!.text).toMatch(/- page 1: ".+" \(confidence \d+/);

    // Three pages read, charged once: the views and their images cost nothing.
    expect(await account.balance()).toBe(7);
    await readPage(mcp, jobId, 2);
    expect(await account.balance()).toBe(7);
    await expectLedgerConsistent(account);

    // Another account's job is refused like every cross-account read, its image too.
    const other = await createAccount(1);
    const stranger = await client(other.key);
    for (const [name, args] of [
      ["read_viewer_page", { job_id: jobId, page: 1 }],
      ["show_extraction", { job_id: jobId }],
    ] as const) {
      const refused = toolResultSchema.parse(await stranger.callTool({ name, arguments: args }));
      expect(refused.isError).toBe(true);
      expect(refused.content).toHaveLength(1);
      expect(refused.content[0]!.text).toMatch(/^not_found: /);
    }

    // A page the job does not read.
    const outside = toolResultSchema.parse(
      await mcp.callTool({ name: "read_viewer_page", arguments: { job_id: jobId, page: 9 } }),
    );
    expect(outside.isError).toBe(true);
    expect(outside.content[0]!.text).toMatch(/^invalid_request: page: /);
  });
});
