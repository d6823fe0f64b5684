import { http, HttpResponse } from "msw";
import { afterEach, describe, expect, it } from "vitest";
import * as mcpRoute from "@/app/api/mcp/route";
import { characterErrorRate } from "@/bench/metrics";
import { ocrResponseSchema } from "@/lib/api/schemas";
import { ocrDocumentSchema } from "@/lib/ocr/model";
import {
  base64Of,
  callOcr,
  createAccount,
  expectLedgerConsistent,
  expectOcrOk,
  groundTruth,
  tinyPng,
  withRemoteFiles,
  withStore,
} from "../api/support";
import { CLIENT_KINDS, connectClient, expectExtracted, type ListedTool, type McpClient, type WireLog } from "./support";

/*
 * The official SDK clients — v1 Streamable HTTP and SSE, v2 Streamable HTTP (2025 handshake and 2026-07-28
 * negotiation) and SSE — against the route module itself, with `fetch` calling its handlers in process.
 */

const server = withRemoteFiles();

const png = tinyPng("HELLO 42");
const pngBase64 = png.toString("base64");
const pdfBase64 = base64Of("born-digital.pdf");
const FORMATS = ["text", "json", "markdown"] as const;

/** The tool as `tools/list` must show it: the documented input schema (docs/mcp.md), described field by field, and the REST output. */
function expectExtractTextTool(tools: ListedTool[]): void {
  expect(tools.map((tool) => tool.name)).toEqual([
    "extract_text",
    "get_extraction",
    "show_extraction",
    "read_viewer_page",
  ]);
  const [tool] = tools;
  expect(tool!.description).toMatch(/PDF, JPEG, PNG, WebP or TIFF/);
  expect(tool!.annotations).toMatchObject({
    readOnlyHint: true,
    openWorldHint: true,
    destructiveHint: false,
    idempotentHint: false,
  });

  const input = tool!.inputSchema as JsonSchema;
  expect(input.type).toBe("object");
  expect(input.required).toEqual(["image_source"]);
  expect(Object.keys(input.properties!)).toEqual(["image_source", "pages", "max_chars", "output_format"]);
  const source = input.properties!.image_source!;
  expect(source.required).toEqual(["type", "data"]);
  expect(Object.keys(source.properties!)).toEqual(["type", "data", "filename"]);
  expect(source.properties!.type!.enum).toEqual(["base64", "url"]);
  expect(input.properties!.output_format!.enum).toEqual(["text", "json", "markdown", "hocr", "alto", "tsv", "pdf"]);
  for (const field of [
    source,
    source.properties!.type!,
    source.properties!.data!,
    source.properties!.filename!,
    input.properties!.output_format!,
  ]) {
    expect(field.description?.length).toBeGreaterThan(20);
  }

  const output = tool!.outputSchema as JsonSchema;
  expect(output.type).toBe("object");
  // The REST 200 body, `job` when a job read the document, `nextCursor` when the text goes on, `review` when words need a second look (lib/mcp/jobs.ts).
  expect(Object.keys(output.properties!).sort()).toEqual(
    [...Object.keys(ocrResponseSchema.shape), "job", "nextCursor", "review"].sort(),
  );
}

interface JsonSchema {
  type?: string;
  description?: string;
  enum?: unknown[];
  required?: string[];
  properties?: Record<string, JsonSchema>;
}

function call(client: McpClient, args: Record<string, unknown>) {
  return client.callTool({ name: "extract_text", arguments: args });
}

describe("official MCP clients (redis store)", () => {
  withStore("redis");

  const open: McpClient[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((client) => client.close().catch(() => undefined)));
  });

  describe.each(CLIENT_KINDS)("%s", (kind) => {
    it("connects, lists extract_text, and reads a PNG, a PDF and a URL in each format, charging the pages read", async () => {
      const account = await createAccount(40);
      const log: WireLog = { requests: [] };
      const client = await connectClient({ kind, key: account.key, posts: mcpRoute, log });
      open.push(client);

      expect(client.getServerVersion()).toMatchObject({ name: "ocr-service", version: "2.0.0" });
      // Tasks are core in 2025-11-25 and an extension from 2026-07-28 on (the SDK leaves them out of that era's answer).
      expect(Object.keys(client.getServerCapabilities() as object)).toEqual(
        kind === "v2 streamable (2026-07-28)" ? ["resources", "tools"] : ["resources", "tools", "tasks"],
      );
      expectExtractTextTool((await client.listTools()).tools);

      server.use(
        http.get("https://files.example/scans/hello.png", () =>
          HttpResponse.arrayBuffer(new Uint8Array(png).buffer, { headers: { "content-type": "image/png" } }),
        ),
      );

      let balance = 40;
      for (const format of FORMATS) {
        const image = expectExtracted(
          await call(client, {
            image_source: { type: "base64", data: pngBase64, filename: "hello.png" },
            output_format: format,
          }),
        );
        expect(image).toMatchObject({
          success: true,
          userId: account.userId,
          inputSource: "base64",
          creditsUsed: 1,
          pageCount: 1,
        });
        expectText(image.extractedText, format, "HELLO 42");

        const pdf = expectExtracted(
          await call(client, { image_source: { type: "base64", data: pdfBase64 }, output_format: format }),
        );
        expect(pdf).toMatchObject({ inputSource: "base64", creditsUsed: 3, pageCount: 3, confidence: 100 });
        expectText(pdf.extractedText, format, "Nothing here was scanned.");
        if (format === "text")
          expect(characterErrorRate(pdf.extractedText, groundTruth("born-digital.pdf"))).toBeLessThan(0.01);

        const url = expectExtracted(
          await call(client, {
            image_source: { type: "url", data: "https://files.example/scans/hello.png" },
            output_format: format,
          }),
        );
        expect(url).toMatchObject({ inputSource: "url", creditsUsed: 1, pageCount: 1 });
        expectText(url.extractedText, format, "HELLO 42");

        balance -= 5;
        expect(await account.balance()).toBe(balance);
      }
      await expectLedgerConsistent(account);

      // The transport really was the one named: SSE posts to the session endpoint, Streamable HTTP to /api/mcp.
      const posts = log.requests.filter((request) => request.method === "POST");
      expect(posts.length).toBeGreaterThanOrEqual(11);
      const sessionPosts = posts.filter((request) => new URL(request.url).searchParams.has("sessionId"));
      expect(sessionPosts.length).toBe(kind.endsWith("sse") ? posts.length : 0);
      const statuses = new Set(posts.map((request) => request.status));
      if (kind.endsWith("sse")) expect(statuses).toEqual(new Set([202]));
      else expect([...statuses].every((status) => status === 200 || status === 202)).toBe(true);
      // One stream for SSE; a Streamable HTTP client that asks for the optional standalone stream is told `405`, once
      // (the SDKs then do without it).
      const gets = log.requests.filter((request) => request.method === "GET").map((request) => request.status);
      if (kind.endsWith("sse")) expect(gets).toEqual([200]);
      else expect(gets.length <= 1 && gets.every((status) => status === 405), JSON.stringify(gets)).toBe(true);
    });
  });

  it("the tool and REST answer alike for the same file (the default format is text)", async () => {
    const account = await createAccount(10);
    const client = await connectClient({ kind: "v1 streamable", key: account.key, posts: mcpRoute });
    open.push(client);
    const viaMcp = expectExtracted(
      await call(client, { image_source: { type: "base64", data: base64Of("paragraph.png") } }),
    );
    const viaRest = await expectOcrOk(await callOcr({ image: base64Of("paragraph.png") }, { key: account.key }));
    const { processingTime: _mcpTime, requestId: mcpRequest, ...mcp } = viaMcp;
    const { processingTime: _restTime, requestId: restRequest, ...rest } = viaRest;
    expect(mcp).toEqual(rest);
    expect(mcpRequest).not.toBe(restRequest);
    expect(characterErrorRate(mcp.extractedText, groundTruth("paragraph.png"))).toBeLessThan(0.05);
    expect(await account.balance()).toBe(8);
  });
});

function expectText(text: string, format: (typeof FORMATS)[number], expected: string): void {
  if (format === "json") {
    const document = ocrDocumentSchema.strict().parse(JSON.parse(text));
    expect(document.pages.map((page) => page.text).join("\n")).toContain(expected);
    return;
  }
  expect(text).toContain(expected);
}
