import { PDFDocument } from "pdf-lib";
import { beforeAll, describe, expect, it } from "vitest";
import type { ErrorCode } from "@/lib/api/errors";
import {
  base64Of,
  callOcr,
  createAccount,
  expectApiError,
  expectOcrOk,
  fixture,
  tinyPng,
  withStore,
  type TestAccount,
} from "./support";

// Two requests per case from one key: well past the default 60 per minute.
withStore("memory", { RATE_LIMIT_PER_MINUTE: "100000" });

interface HostileCase {
  name: string;
  /** JSON-serialized as the body, unless `raw` is given. */
  body?: unknown;
  raw?: BodyInit;
  headers?: Record<string, string>;
  code: ErrorCode;
  message?: RegExp;
}

/** Deterministic bytes (xorshift32), so a failure reproduces. */
function randomBytes(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let state = seed || 1;
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    bytes[i] = state & 0xff;
  }
  return bytes;
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const withPrefix = (prefix: number[] | string, length: number, seed: number) => {
  const head = typeof prefix === "string" ? Buffer.from(prefix, "latin1") : Uint8Array.from(prefix);
  const bytes = randomBytes(length, seed);
  bytes.set(head);
  return bytes;
};

async function manyPagesPdf(pages: number): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  for (let i = 0; i < pages; i++) pdf.addPage([200, 200]);
  return pdf.save();
}

const MiB = 1024 * 1024;
const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const JPEG_MAGIC = [0xff, 0xd8, 0xff, 0xe0];

function jsonCases(): HostileCase[] {
  const deepObject = `${'{"options":'.repeat(50_000)}{}${"}".repeat(50_000)}`;
  const deepArray = `${"[".repeat(200_000)}${"]".repeat(200_000)}`;
  const manyKeys = {
    image: "AAAA",
    options: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i])),
  };
  return [
    { name: "truncated JSON", raw: '{"image": "AAAA"', code: "invalid_request", message: /not valid JSON/ },
    { name: "not JSON at all", raw: "image=AAAA&format=text", code: "invalid_request", message: /not valid JSON/ },
    { name: "empty body", raw: "", code: "invalid_request", message: /empty/ },
    { name: "a JSON array", body: [{ image: "AAAA" }], code: "invalid_request" },
    { name: "JSON null", body: null, code: "invalid_request" },
    { name: "a JSON string", body: "AAAA", code: "invalid_request" },
    { name: "a JSON number", body: 42, code: "invalid_request" },
    { name: "deeply nested objects", raw: deepObject, code: "invalid_request", message: /nested more than/ },
    { name: "deeply nested arrays", raw: deepArray, code: "invalid_request", message: /nested more than/ },
    // Past the JSON body's limit: the base64 of MAX_INLINE_BYTES (20 MiB self-hosted) and 64 KiB.
    { name: "30 MB of JSON", raw: JSON.stringify({ image: "A".repeat(30 * MiB) }), code: "payload_too_large" },
    {
      name: "30 MB of JSON streamed without Content-Length",
      raw: new Blob([JSON.stringify({ image: "A".repeat(30 * MiB) })]).stream(),
      code: "payload_too_large",
    },
    {
      name: "invalid UTF-8",
      raw: Uint8Array.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      code: "invalid_request",
      message: /UTF-8/,
    },
    { name: "a byte-order mark and garbage", raw: "\ufeff\u0000{}", code: "invalid_request" },
    {
      name: "Content-Type text/plain",
      body: { image: "AAAA" },
      headers: { "content-type": "text/plain" },
      code: "unsupported_media_type",
    },
    {
      name: "multipart/form-data with the JSON body's field name",
      raw: "--x\r\nContent-Disposition: form-data; name=image\r\n\r\nAAAA\r\n--x--",
      headers: { "content-type": "multipart/form-data; boundary=x" },
      // Multipart is a request form now (issue 29 point 8): a JSON field name in it is a malformed form, said so.
      code: "invalid_request",
      message: /the file goes in "file"/,
    },
    {
      name: "an unknown top-level key",
      body: { image: "AAAA", format: "text" },
      code: "invalid_request",
      message: /Unknown field "format"/,
    },
    {
      name: "an unknown option key (typo)",
      body: { image: "AAAA", options: { fromat: "json" } },
      code: "invalid_request",
      message: /"fromat"/,
    },
    { name: "20 000 unknown option keys", body: manyKeys, code: "invalid_request", message: /and 19995 more/ },
    { name: "options is a string", body: { image: "AAAA", options: "json" }, code: "invalid_request" },
    {
      name: "an unknown format",
      body: { image: "AAAA", options: { format: "docx" } },
      code: "invalid_request",
      message: /format/,
    },
    { name: "format is a number", body: { image: "AAAA", options: { format: 1 } }, code: "invalid_request" },
    {
      name: "language too long",
      body: { image: "AAAA", options: { language: "eng+".repeat(40) } },
      code: "invalid_request",
    },
    { name: "pages is a number", body: { image: "AAAA", options: { pages: 2 } }, code: "invalid_request" },
  ];
}

function inputCases(): HostileCase[] {
  const png = base64Of("small-text.png");
  return [
    {
      name: "both image and imageUrl",
      body: { image: png, imageUrl: "https://files.example/a.png" },
      code: "invalid_request",
      message: /not both/,
    },
    { name: "neither input", body: {}, code: "invalid_request" },
    { name: "image is null", body: { image: null }, code: "invalid_request" },
    { name: "image is a number", body: { image: 12345 }, code: "invalid_request" },
    { name: "image is an array", body: { image: [png] }, code: "invalid_request" },
    { name: "image is an object", body: { image: { data: png } }, code: "invalid_request" },
    { name: "imageUrl is a number", body: { imageUrl: 42 }, code: "invalid_request" },
    {
      name: "imageUrl too long",
      body: { imageUrl: `https://files.example/${"a".repeat(9000)}` },
      code: "invalid_request",
    },
    { name: "image is empty", body: { image: "" }, code: "invalid_request", message: /base64/ },
    { name: "bad base64 characters", body: { image: "!!!!####" }, code: "invalid_request", message: /base64/ },
    { name: "base64 of impossible length", body: { image: "AAAAA" }, code: "invalid_request", message: /base64/ },
    { name: "base64 with wrong padding", body: { image: "AA=A" }, code: "invalid_request", message: /base64/ },
    {
      name: "a data URL that is not base64",
      body: { image: "data:image/png,hello" },
      code: "invalid_request",
      message: /data URL/,
    },
    { name: "a data URL with bad base64", body: { image: "data:image/png;base64,@@@@" }, code: "invalid_request" },
    {
      name: "20 MiB + 16 KB decoded: over the inline limit",
      body: { image: "A".repeat(Math.ceil(((20 * MiB + 16 * 1024) * 4) / 3 / 4) * 4) },
      code: "payload_too_large",
      message: /inline limit/,
    },
    { name: "imageUrl not a URL", body: { imageUrl: "not a url" }, code: "invalid_request" },
    { name: "imageUrl with a file: scheme", body: { imageUrl: "file:///etc/passwd" }, code: "invalid_request" },
    { name: "imageUrl on loopback", body: { imageUrl: "http://127.0.0.1:3000/api/health" }, code: "invalid_request" },
    { name: "imageUrl on localhost", body: { imageUrl: "http://localhost/a.png" }, code: "invalid_request" },
    {
      name: "imageUrl on cloud metadata",
      body: { imageUrl: "http://169.254.169.254/latest/meta-data/" },
      code: "invalid_request",
    },
    {
      name: "imageUrl on IPv4-mapped IPv6 loopback",
      body: { imageUrl: "http://[::ffff:127.0.0.1]/a.png" },
      code: "invalid_request",
    },
    {
      name: "imageUrl with credentials",
      body: { imageUrl: "https://user:pass@files.example/a.png" },
      code: "invalid_request",
    },
    { name: "unknown language", body: { image: png, options: { language: "xx_klingon" } }, code: "invalid_request" },
    {
      name: "pages syntax",
      body: { image: base64Of("born-digital.pdf"), options: { pages: "one-two" } },
      code: "invalid_request",
    },
    { name: "page 0", body: { image: base64Of("born-digital.pdf"), options: { pages: "0" } }, code: "invalid_request" },
    {
      name: "a page past the end",
      body: { image: base64Of("born-digital.pdf"), options: { pages: "2-9" } },
      code: "invalid_request",
      message: /does not exist/,
    },
    { name: "page 2 of an image", body: { image: png, options: { pages: "2" } }, code: "invalid_request" },
  ];
}

function fileCases(manyPages: Uint8Array): HostileCase[] {
  const file = (name: string, code: ErrorCode, message?: RegExp): HostileCase => ({
    name,
    body: { image: base64Of(`hostile/${name}`) },
    code,
    message,
  });
  const random: HostileCase[] = [1, 7, 64, 1000, 4096, 65_536].map((length, i) => ({
    name: `${length} random bytes`,
    body: { image: b64(randomBytes(length, 0x9e37 + i)) },
    code: "unsupported_media_type",
  }));
  return [
    file("random.bin", "unsupported_media_type"),
    file("gif.gif", "unsupported_media_type"),
    file("html.html", "unsupported_media_type"),
    file("not-really.pdf", "unreadable_document"),
    file("truncated.png", "unreadable_document"),
    file("truncated-header.png", "unreadable_document"),
    file("truncated.jpg", "unreadable_document"),
    file("truncated.pdf", "unreadable_document"),
    file("encrypted.pdf", "unreadable_document"),
    file("huge-header.png", "payload_too_large", /megapixels/),
    file("bomb.png", "payload_too_large", /megapixels/),
    {
      name: "PNG magic + random bytes",
      body: { image: b64(withPrefix(PNG_MAGIC, 2048, 11)) },
      code: "unreadable_document",
    },
    {
      name: "JPEG magic + random bytes",
      body: { image: b64(withPrefix(JPEG_MAGIC, 2048, 12)) },
      code: "unreadable_document",
    },
    {
      name: "WebP magic + random bytes",
      body: { image: b64(withPrefix("RIFF\u0000\u0008\u0000\u0000WEBPVP8 ", 2048, 13)) },
      code: "unreadable_document",
    },
    {
      name: "PDF magic + random bytes",
      body: { image: b64(withPrefix("%PDF-1.7\n", 2048, 14)) },
      code: "unreadable_document",
    },
    {
      name: "the first 100 bytes of a real PNG",
      body: { image: b64(fixture("paragraph.png").subarray(0, 100)) },
      code: "unreadable_document",
    },
    {
      name: "the first half of a real PDF",
      body: { image: b64(fixture("born-digital.pdf").subarray(0, 800)) },
      code: "unreadable_document",
    },
    {
      name: "a PDF with 501 blank pages (limit 50 of work, 500 pages in all)",
      body: { image: b64(manyPages) },
      code: "payload_too_large",
      message: /at most 500/,
    },
    ...random,
  ];
}

describe("hostile input: each a clean 4xx with the error body, nothing charged, and the next request still works", () => {
  let account: TestAccount;
  let valid: string;
  const cases: HostileCase[] = [];

  beforeAll(async () => {
    account = await createAccount(1000);
    valid = tinyPng("STILL OK").toString("base64");
    cases.push(...jsonCases(), ...inputCases(), ...fileCases(await manyPagesPdf(501)));
  });

  it("has at least 50 generated cases", () => {
    expect(cases.length).toBeGreaterThanOrEqual(50);
  });

  it("answers every one with its 4xx and charges nothing", async () => {
    let balance = await account.balance();
    const seen: string[] = [];
    for (const testCase of cases) {
      const response = await callOcr(testCase.body, { key: account.key, raw: testCase.raw, headers: testCase.headers });
      seen.push(`${testCase.name}: ${response.status}`);
      expect(response.status, testCase.name).toBeGreaterThanOrEqual(400);
      expect(response.status, testCase.name).toBeLessThan(500);
      const body = await expectApiError(response, testCase.code).catch((error: unknown) => {
        throw new Error(`${testCase.name}: ${error instanceof Error ? error.message : String(error)}`);
      });
      if (testCase.message) expect(body.error.message, testCase.name).toMatch(testCase.message);
      expect(await account.balance(), testCase.name).toBe(balance);

      // The next valid request still succeeds (and is charged 1).
      const ok = await expectOcrOk(await callOcr({ image: valid }, { key: account.key }));
      expect(ok.extractedText, testCase.name).toMatch(/STILL/);
      balance -= 1;
      expect(await account.balance(), testCase.name).toBe(balance);
    }
    expect(seen).toHaveLength(cases.length);
  });

  it("a PDF with zero pages → 422 unreadable_document", async () => {
    const response = await callOcr({ image: base64Of("hostile/zero-pages.pdf") }, { key: account.key });
    await expectApiError(response, "unreadable_document");
  });
});
