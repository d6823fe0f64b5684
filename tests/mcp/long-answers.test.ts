import { PDFDocument, StandardFonts } from "pdf-lib";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { callOcr, createAccount, expectLedgerConsistent, withStore } from "../api/support";
import { extractTextOutputSchema, getExtractionOutputSchema } from "@/lib/mcp/jobs";
import { createMcpRoute } from "@/lib/mcp";
import { connectClient, toolResultSchema, type McpClient } from "./support";

/*
 * Issue 30, point 2: an agent gets the text in pieces it can hold. A long born-digital PDF (the 117-page textbook's
 * shape, generated) read within one call: the first answer holds at most `max_chars`, and `get_extraction` continues
 * it with the answer's cursor — the concatenation is the whole text, exactly, and the pages are charged once. `pages`
 * reads (and charges) only the pages asked for.
 */

withStore("redis");

const PAGES = 117;
let pdf: string;

beforeAll(async () => {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let n = 1; n <= PAGES; n++) {
    const page = doc.addPage([612, 792]);
    const lines = [`Chapter ${Math.ceil(n / 10)}, page ${n} of ${PAGES}`];
    for (let line = 1; line <= 18; line++)
      lines.push(`Line ${line} of page ${n}: the quick brown fox jumps over the lazy dog, twice.`);
    lines.forEach((text, index) => page.drawText(text, { x: 40, y: 760 - index * 14, size: 10, font }));
  }
  pdf = Buffer.from(await doc.save()).toString("base64");
}, 60_000);

const route = createMcpRoute();
const clients: McpClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
});

describe.each(["v2 streamable", "v1 sse"] as const)("%s", (kind) => {
  it("a 117-page text-layer PDF: the answer holds max_chars, the cursor delivers the rest exactly; charged once", async () => {
    const account = await createAccount(2 * PAGES + 10);
    // The whole text, as REST answers it.
    const rest = await callOcr({ image: pdf }, { key: account.key });
    expect(rest.status).toBe(200);
    const full = ((await rest.json()) as { extractedText: string }).extractedText;
    expect(full.length).toBeGreaterThan(100_000);
    const before = await account.balance();

    const client = await connectClient({ kind, key: account.key, posts: route });
    clients.push(client);
    const first = toolResultSchema.parse(
      await client.callTool({
        name: "extract_text",
        arguments: { image_source: { type: "base64", data: pdf, filename: "textbook.pdf" } },
      }),
    );
    expect(first.isError ?? false, JSON.stringify(first.content).slice(0, 300)).toBe(false);
    const body = extractTextOutputSchema.strict().parse(first.structuredContent);
    // Default max_chars: 20 000.
    expect(body.extractedText.length).toBe(20_000);
    expect(first.content[0]).toEqual({ type: "text", text: body.extractedText });
    expect(first.content[1]!.text).toContain(`get_extraction with {"cursor": "${body.nextCursor}"}`);
    expect(body).toMatchObject({ creditsUsed: PAGES, pageCount: PAGES });
    expect(await account.balance()).toBe(before - PAGES);

    const parts = [body.extractedText];
    let cursor = body.nextCursor ?? null;
    let calls = 0;
    while (cursor !== null) {
      calls += 1;
      const answer = toolResultSchema.parse(
        await client.callTool({ name: "get_extraction", arguments: { cursor, max_chars: 50_000 } }),
      );
      expect(answer.isError ?? false, JSON.stringify(answer.content).slice(0, 300)).toBe(false);
      const slice = getExtractionOutputSchema.strict().parse(answer.structuredContent);
      expect(slice.jobId).toBeUndefined();
      expect(slice.text.length).toBeLessThanOrEqual(50_000);
      parts.push(slice.text);
      cursor = slice.nextCursor ?? null;
    }
    expect(parts.join("")).toBe(full);
    expect(calls).toBe(Math.ceil((full.length - 20_000) / 50_000));
    // Reading on is free.
    expect(await account.balance()).toBe(before - PAGES);

    // A cursor of another account is not found (the kept text is the account's).
    const other = await createAccount(0);
    const stranger = await connectClient({ kind, key: other.key, posts: route });
    clients.push(stranger);
    const foreign = toolResultSchema.parse(
      await stranger.callTool({ name: "get_extraction", arguments: { cursor: body.nextCursor } }),
    );
    expect(foreign.isError).toBe(true);
    expect(foreign.content[0]!.text).toMatch(/^gone: /);
    await expectLedgerConsistent(account);
  }, 120_000);

  it("pages and max_chars: only the pages asked for, read and charged; a short answer has no cursor", async () => {
    const account = await createAccount(20);
    const client = await connectClient({ kind, key: account.key, posts: route });
    clients.push(client);
    const answer = toolResultSchema.parse(
      await client.callTool({
        name: "extract_text",
        arguments: { image_source: { type: "base64", data: pdf }, pages: "3-5", max_chars: 100_000 },
      }),
    );
    const body = extractTextOutputSchema.strict().parse(answer.structuredContent);
    expect(body.creditsUsed).toBe(3);
    expect(body.nextCursor).toBeUndefined();
    const pages = body.extractedText.split("\f");
    expect(pages).toHaveLength(3);
    expect(pages[0]).toContain("page 3 of 117");
    expect(pages[2]).toContain("page 5 of 117");
    expect(answer.content).toEqual([{ type: "text", text: body.extractedText }]);
    expect(await account.balance()).toBe(17);

    const bad = toolResultSchema.parse(
      await client.callTool({
        name: "extract_text",
        arguments: { image_source: { type: "base64", data: pdf }, pages: "200-" },
      }),
    );
    expect(bad.isError).toBe(true);
    expect(bad.content[0]!.text).toMatch(/^invalid_request: .*pages/);
    expect(bad.content[0]!.text).not.toMatch(/options\.pages/);
    expect(await account.balance()).toBe(17);
  }, 60_000);
});
