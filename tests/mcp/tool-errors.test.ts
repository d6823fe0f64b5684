import { delay, http, HttpResponse } from "msw";
import { afterEach, describe, expect, it } from "vitest";
import { createMcpRoute, type McpRoute } from "@/lib/mcp";
import {
  TEST_DNS,
  callOcr,
  createAccount,
  expectApiError,
  fixtureArrayBuffer,
  setEnv,
  tinyPng,
  withRemoteFiles,
  withStore,
} from "../api/support";
import { connectClient, expectToolError, toolResultSchema, type ClientKind, type McpClient } from "./support";

/*
 * The tool's error messages name the tool's arguments (`image_source.data`, `output_format`), never REST's fields
 * (`image`, `imageUrl`, `options.*`), which the model never sent — through the official SDK clients, over both
 * transports. REST keeps REST's names.
 */

const server = withRemoteFiles();
withStore("memory");

/** REST's field names as they would appear in a message (not inside a host name); none may reach the model. */
const REST_FIELDS = /(?<![\w.-])(image|imageUrl|options\.\w+)(?!\w|-|\.\w)/;

const clients: McpClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
});

async function callWith(
  kind: ClientKind,
  args: Record<string, unknown>,
  route: McpRoute = createMcpRoute(),
): Promise<unknown> {
  const account = await createAccount(5);
  const client = await connectClient({ kind, key: account.key, posts: route });
  clients.push(client);
  return client.callTool({ name: "extract_text", arguments: args });
}

/** A tool error with `code` whose message (before its hint) names no REST field. */
async function toolMessage(
  kind: ClientKind,
  args: Record<string, unknown>,
  code: string,
  route?: McpRoute,
): Promise<string> {
  const text = expectToolError(await callWith(kind, args, route), code);
  const message = text.slice(0, text.indexOf(" Hint: "));
  expect(message).not.toMatch(REST_FIELDS);
  return message;
}

const base64 = (data: string) => ({ image_source: { type: "base64", data } });
const url = (data: string) => ({ image_source: { type: "url", data } });

describe.each(["v2 streamable", "v1 sse"] as const)("extract_text errors in the tool's terms (%s)", (kind) => {
  it("invalid base64 → image_source.data is not valid base64", async () => {
    expect(await toolMessage(kind, base64("@@@not base64@@@"), "invalid_request")).toMatch(
      /^invalid_request: image_source\.data is not valid base64 \(unexpected character at position 0\)/,
    );
  });

  it("a data URL that is not base64 → image_source.data: a data URL must be base64-encoded", async () => {
    expect(await toolMessage(kind, base64("data:image/png,hello"), "invalid_request")).toMatch(
      /^invalid_request: image_source\.data: a data URL must be base64-encoded/,
    );
  });

  it('an inline file over the limit → image_source.data is … decoded; send it as a URL (image_source.type "url")', async () => {
    const restore = setEnv({ MAX_INLINE_BYTES: "2000" });
    try {
      const message = await toolMessage(kind, base64(tinyPng("BIG", 900, 600).toString("base64")), "payload_too_large");
      expect(message).toMatch(
        /^payload_too_large: image_source\.data is [\d.]+ MB decoded; the inline limit is [\d.]+ MB\./,
      );
      expect(message).toContain('Send larger files as a URL instead (image_source.type "url").');
    } finally {
      restore();
    }
  });

  it("not a URL → image_source.data is not a valid URL; a URL over 8192 characters → image_source.data: Too big", async () => {
    expect(await toolMessage(kind, url("scan.png"), "invalid_request")).toBe(
      "invalid_request: image_source.data is not a valid URL.",
    );
    const long = `https://files.example/${"a".repeat(8_200)}.png`;
    expect(await toolMessage(kind, url(long), "invalid_request")).toMatch(
      /^invalid_request: image_source\.data: Too big/,
    );
  });

  it("a URL that answers 404 → Could not fetch image_source.data (a host named image… is left as it is)", async () => {
    TEST_DNS["image.example"] = ["93.184.216.36"];
    server.use(http.get("https://image.example/missing.png", () => new HttpResponse(null, { status: 404 })));
    expect(await toolMessage(kind, url("https://image.example/missing.png"), "fetch_failed")).toBe(
      "fetch_failed: Could not fetch image_source.data: image.example answered HTTP 404.",
    );
  });

  it("a URL file over MAX_URL_BYTES → The file at image_source.data is larger than the limit", async () => {
    server.use(
      http.get("https://files.example/big.png", () =>
        HttpResponse.arrayBuffer(new Uint8Array(tinyPng("BIG", 900, 600)).buffer),
      ),
    );
    const restore = setEnv({ MAX_URL_BYTES: "2000" });
    try {
      expect(await toolMessage(kind, url("https://files.example/big.png"), "payload_too_large")).toMatch(
        /^payload_too_large: The file at image_source\.data is larger than the [\d.]+ MB limit for URL files/,
      );
    } finally {
      restore();
    }
  });

  it("the deadline passes while fetching → … while fetching image_source.data", async () => {
    server.use(
      http.get("https://files.example/slow.png", async () => {
        await delay(5_000);
        return new HttpResponse(null, { status: 500 });
      }),
    );
    expect(
      await toolMessage(
        kind,
        url("https://files.example/slow.png"),
        "timeout",
        createMcpRoute({ toolDeadlineMs: 1_000 }),
      ),
    ).toBe("timeout: The request deadline passed while fetching image_source.data.");
  });

  it("a PDF over MAX_PDF_PAGES is no error: it is read as a job, and the answer says how to get its text", async () => {
    server.use(
      http.get("https://files.example/three.pdf", () => HttpResponse.arrayBuffer(fixtureArrayBuffer("scanned-3.pdf"))),
    );
    const restore = setEnv({ MAX_PDF_PAGES: "2" });
    try {
      // A short call budget: no runner reads the job here, so the call stops waiting for it soon.
      const result = toolResultSchema.parse(
        await callWith(kind, url("https://files.example/three.pdf"), createMcpRoute({ toolDeadlineMs: 4_000 })),
      );
      expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
      const text = result.content[0]!.text!;
      expect(text).toMatch(
        /^This document is more than one call reads \(it has more than 2 pages of OCR work, the most one call reads\)\. It is being read as job job_\S+: (Queued|Reading).*\. Call get_extraction with \{"job_id": "job_\S+"\}/,
      );
      expect(text).not.toMatch(REST_FIELDS);
    } finally {
      restore();
    }
  });
});

describe("REST keeps REST's names", () => {
  it("image, imageUrl and options.pages", async () => {
    const account = await createAccount(5);
    await expectApiError(
      await callOcr({ image: "@@@not base64@@@" }, { key: account.key }),
      "invalid_request",
      /^image is not valid base64/,
    );
    await expectApiError(
      await callOcr({ image: "data:image/png,hello" }, { key: account.key }),
      "invalid_request",
      /^image: a data URL must be base64-encoded/,
    );
    await expectApiError(
      await callOcr({ imageUrl: "scan.png" }, { key: account.key }),
      "invalid_request",
      /^imageUrl is not a valid URL$/,
    );
    server.use(http.get("https://files.example/gone.png", () => new HttpResponse(null, { status: 404 })));
    await expectApiError(
      await callOcr({ imageUrl: "https://files.example/gone.png" }, { key: account.key }),
      "fetch_failed",
      /^Could not fetch imageUrl: files\.example answered HTTP 404$/,
    );
    const restore = setEnv({ MAX_PDF_PAGES: "2", MAX_INLINE_BYTES: "4000" });
    try {
      await expectApiError(
        await callOcr({ image: tinyPng("BIG", 900, 600).toString("base64") }, { key: account.key }),
        "payload_too_large",
        /^image is [\d.]+ MB decoded; .*Send larger files with imageUrl instead\.$/,
      );
      server.use(
        http.get("https://files.example/scan.pdf", () => HttpResponse.arrayBuffer(fixtureArrayBuffer("scanned-3.pdf"))),
      );
      await expectApiError(
        await callOcr({ imageUrl: "https://files.example/scan.pdf" }, { key: account.key }),
        "payload_too_large",
        /^This PDF has more than 2 pages of work for one request: .*: choose fewer pages with options\.pages, or send it as an asynchronous job instead \(POST \/api\/ocr\/jobs, or this route with Prefer: respond-async\)$/,
      );
    } finally {
      restore();
    }
  });
});
