import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ocrResponseSchema } from "@/lib/api/schemas";
import { listLedger } from "@/lib/credits";
import { ApiError, type ErrorCode } from "@/lib/api/errors";
import * as ocr from "@/lib/ocr";
import type { OpenedDocument } from "@/lib/ocr";
import { processDocument, type ProcessDocumentInput } from "@/lib/intake";
import { createCanvas } from "@napi-rs/canvas";
import { PDFDocument } from "pdf-lib";
import { MAX_SYNC_PDF_BYTES } from "@/lib/ocr/model";
import { getStore } from "@/lib/store";
import { DEFAULT_MAX_INLINE_BYTES } from "@/lib/vocabulary";
import { createTestPool, seededRandom } from "../support/ocr";
import { base64Of, createAccount, tinyPng, withStore } from "./support";
import { getEnv } from "@/lib/env";
import { testSettings, processRuntime } from "../support/env";

/*
 * processDocument on its own, as the MCP tool will call it: no HTTP. The engine is real; `openDocument` and
 * `render` are wrapped so a test can count `close()` calls or make rendering fail.
 */
const opened: Array<ReturnType<typeof vi.fn>> = [];
vi.mock("@/lib/ocr", async (importOriginal) => {
  const actual = await importOriginal<typeof import("@/lib/ocr")>();
  return {
    ...actual,
    render: vi.fn(actual.render),
    renderSearchablePdf: vi.fn(actual.renderSearchablePdf),
    openDocument: vi.fn(async (...args: Parameters<typeof actual.openDocument>): Promise<OpenedDocument> => {
      const document = await actual.openDocument(...args);
      const close = vi.fn(() => document.close());
      opened.push(close);
      return { ...document, extract: (options) => document.extract(options), close };
    }),
  };
});

withStore("memory");

afterEach(() => {
  // Every document that was opened was closed, whatever happened.
  for (const close of opened.splice(0)) expect(close).toHaveBeenCalledTimes(1);
});

let sequence = 0;
const requestId = () => `req_pd_${Date.now()}_${sequence++}`;

async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const outcome = await promise.then(
    () => new Error("expected an ApiError"),
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(ApiError);
  return outcome as ApiError;
}

async function expectCode(
  input: Omit<ProcessDocumentInput, "env" | "settings" | "pool" | "workQueue" | "deliveries"> & { pool?: ocr.OcrPool },
  code: ErrorCode,
): Promise<ApiError> {
  const error = await failure(
    processDocument(getStore(), { ...processRuntime(), env: getEnv(), settings: testSettings(), ...input }),
  );
  expect(error.code).toBe(code);
  return error;
}

/** The real engine, one OCR process; dense-page.png keeps it busy for seconds, past short deadlines. */
const pool = createTestPool();
beforeAll(() => pool.warm());
afterAll(() => pool.terminate());
const SLOW = "dense-page.png";

describe("processDocument", () => {
  it("returns the response body and the balance, with processingTime from receivedAt", async () => {
    const account = await createAccount(5);
    const receivedAt = Date.now() - 250;
    const result = await processDocument(getStore(), {
      ...processRuntime(),
      env: getEnv(),
      settings: testSettings(),
      body: { image: tinyPng("MCP 5").toString("base64") },
      account,
      requestId: requestId(),
      receivedAt,
    });
    const response = ocrResponseSchema.strict().parse(result.response);
    expect(response).toMatchObject({ userId: account.userId, inputSource: "base64", creditsUsed: 1, pageCount: 1 });
    expect(response.processingTime).toBeGreaterThanOrEqual(250);
    expect(result.creditsRemaining).toBe(4);
    expect(await account.balance()).toBe(4);
  });

  it("validates its input like the route does (the MCP tool gets the same 400s)", async () => {
    const account = await createAccount(5);
    await expectCode(
      { body: { image: "AAAA", imageUrl: "https://files.example/a.png" }, account, requestId: requestId() },
      "invalid_request",
    );
    await expectCode(
      { body: { image: "AAAA", options: { format: "docx" as "text" } }, account, requestId: requestId() },
      "invalid_request",
    );
    expect(await account.balance()).toBe(5);
  });

  it("a deadline passing during OCR → 504 timeout: the job is stopped (its process killed); reserved, then refunded in full", async () => {
    const account = await createAccount(5);
    const id = requestId();
    const stopped = pool.stats().stopped.timeout;
    await expectCode(
      { body: { image: base64Of(SLOW) }, account, requestId: id, pool, deadline: Date.now() + 2_000 },
      "timeout",
    );
    expect(pool.stats().stopped.timeout).toBe(stopped + 1);
    expect(await account.balance()).toBe(5);
    const { entries } = await listLedger(getStore(), account.userId);
    expect(entries.slice(0, 2).map((entry) => [entry.reason, entry.delta, entry.requestId])).toEqual([
      ["refund", 1, id],
      ["ocr", -1, id],
    ]);
  });

  it("a deadline already past → 504 before anything is charged or recognized", async () => {
    const account = await createAccount(5);
    const before = pool.stats();
    await expectCode(
      { body: { image: base64Of("small-text.png") }, account, requestId: requestId(), pool, deadline: Date.now() - 1 },
      "timeout",
    );
    expect(pool.stats()).toMatchObject({ completed: before.completed, stopped: before.stopped });
    const { entries } = await listLedger(getStore(), account.userId);
    expect(entries.map((entry) => entry.reason)).toEqual(["grant"]);
  });

  it("the default deadline is receivedAt + REQUEST_DEADLINE_MS", async () => {
    const account = await createAccount(5);
    // Received 54 s ago: one second of the default 55 s is left.
    await expectCode(
      { body: { image: base64Of(SLOW) }, account, requestId: requestId(), pool, receivedAt: Date.now() - 54_000 },
      "timeout",
    );
    expect(await account.balance()).toBe(5);
  });

  it("engine errors answer with the API's codes and the request's field names, before anything is charged", async () => {
    const account = await createAccount(5);
    const pdf = base64Of("born-digital.pdf");
    const missing = await expectCode(
      { body: { image: pdf, options: { pages: "9" } }, account, requestId: requestId(), pool },
      "invalid_request",
    );
    expect(missing.message).toBe("options.pages: page 9 does not exist; the document has 3 pages");
    const language = await expectCode(
      { body: { image: pdf, options: { language: "eng+fra+deu+spa" } }, account, requestId: requestId(), pool },
      "invalid_request",
    );
    expect(language.message).toBe("options.language: at most 3 languages at once");
    expect(await account.balance()).toBe(5);
  });

  it("402 before any OCR: nothing recognized, nothing charged", async () => {
    const account = await createAccount(2);
    const ocrJobs = pool.stats().completed;
    const error = await expectCode(
      { body: { image: base64Of("scanned-3.pdf") }, account, requestId: requestId(), pool },
      "insufficient_credits",
    );
    expect(error.message).toMatch(/needs 3 credits \(3 pages\) and the balance is 2/);
    expect(error.headers["x-credits-remaining"]).toBe("2");
    // The PDF was inspected (its page count), but no page went to an OCR process.
    expect(pool.stats().completed).toBe(ocrJobs);
    expect(await account.balance()).toBe(2);
  });

  it("a failure after the OCR (rendering) is refunded and surfaces as is", async () => {
    const account = await createAccount(5);
    vi.mocked(ocr.render).mockImplementationOnce(() => {
      throw new TypeError("renderer bug");
    });
    const outcome = await processDocument(getStore(), {
      ...processRuntime(),
      env: getEnv(),
      settings: testSettings(),
      body: { image: tinyPng().toString("base64") },
      account,
      requestId: requestId(),
    }).catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(TypeError);
    expect(await account.balance()).toBe(5);
  });

  it("cheap checks fail before the reservation: 415 leaves no ledger entry", async () => {
    const account = await createAccount(5);
    await expectCode(
      { body: { image: base64Of("hostile/gif.gif") }, account, requestId: requestId() },
      "unsupported_media_type",
    );
    const { entries } = await listLedger(getStore(), account.userId);
    expect(entries.map((entry) => entry.reason)).toEqual(["grant"]);
  });
});

/** A PNG of seeded noise (it hardly compresses) of `pixels` pixels, 1024 wide. */
function noisePng(pixels: number): Buffer {
  const width = 1024;
  const height = Math.ceil(pixels / width);
  const canvas = createCanvas(width, height);
  const context = canvas.getContext("2d");
  const data = context.createImageData(width, height);
  const random = seededRandom(23);
  for (let i = 0; i < data.data.length; i += 4) {
    data.data[i] = random() * 256;
    data.data[i + 1] = random() * 256;
    data.data[i + 2] = random() * 256;
    data.data[i + 3] = 255;
  }
  context.putImageData(data, 0, 0);
  return canvas.toBuffer("image/png");
}

/** A noise PNG of about `bytes` bytes (the encoder's ratio measured on a first try, then corrected once). */
function noisePngOfSize(bytes: number): Buffer {
  const first = noisePng(bytes / 3);
  return noisePng(((bytes / 3) * bytes) / first.byteLength);
}

describe("processDocument: the word-level formats and the searchable PDF", () => {
  it("hocr, alto and tsv come in extractedText, charged as any format", async () => {
    const account = await createAccount(5);
    const image = tinyPng("FORMATS 23").toString("base64");
    const heads = {
      hocr: /^<\?xml[^]*class="ocr_page"[^]*FORMATS/,
      alto: /^<\?xml[^]*<alto [^]*CONTENT="FORMATS"/,
      tsv: /^level\tpage_num\t[^]*\tFORMATS\n/,
    };
    for (const [format, pattern] of Object.entries(heads) as Array<["hocr" | "alto" | "tsv", RegExp]>) {
      const { response } = await processDocument(getStore(), {
        ...processRuntime(),
        env: getEnv(),
        settings: testSettings(),
        body: { image, options: { format } },
        account,
        requestId: requestId(),
        pool,
      });
      expect(response.extractedText).toMatch(pattern);
      expect(response.creditsUsed).toBe(1);
    }
    expect(await account.balance()).toBe(2);
    const { entries } = await listLedger(getStore(), account.userId);
    expect(entries.filter((entry) => entry.reason === "ocr").map((entry) => entry.format)).toEqual([
      "tsv",
      "alto",
      "hocr",
    ]);
  });

  it("pdf: the searchable PDF as base64, one credit for the page", async () => {
    const account = await createAccount(5);
    const { response } = await processDocument(getStore(), {
      ...processRuntime(),
      env: getEnv(),
      settings: testSettings(),
      body: { image: tinyPng("SEARCHABLE 7").toString("base64"), options: { format: "pdf" } },
      account,
      requestId: requestId(),
      pool,
    });
    const pdf = Buffer.from(response.extractedText, "base64");
    expect(pdf.subarray(0, 5).toString("latin1")).toBe("%PDF-");
    expect(Buffer.from(pdf.toString("base64"), "base64").equals(pdf)).toBe(true);
    const loaded = await PDFDocument.load(pdf);
    expect(loaded.getPageCount()).toBe(1);
    expect(response.creditsUsed).toBe(1);
    expect(await account.balance()).toBe(4);
  });

  it("a PDF that comes out larger than an answer carries → 413 naming the job route, the reservation refunded", async () => {
    const account = await createAccount(5);
    vi.mocked(ocr.renderSearchablePdf).mockResolvedValueOnce(new Uint8Array(MAX_SYNC_PDF_BYTES + 1));
    const id = requestId();
    const error = await expectCode(
      {
        body: { image: tinyPng("BIG PDF").toString("base64"), options: { format: "pdf" } },
        account,
        requestId: id,
        pool,
      },
      "payload_too_large",
    );
    expect(error.message).toMatch(/The searchable PDF is 3\.0 MB[^]*POST \/api\/ocr\/jobs/);
    expect(await account.balance()).toBe(5);
    const { entries } = await listLedger(getStore(), account.userId);
    expect(entries.slice(0, 2).map((entry) => [entry.reason, entry.delta, entry.requestId])).toEqual([
      ["refund", 1, id],
      ["ocr", -1, id],
    ]);
  });

  it("pdf of a file larger than a synchronous answer carries → 413 naming the job route, before any charge or OCR", async () => {
    const account = await createAccount(5);
    const png = noisePngOfSize(3_070_000);
    expect(png.byteLength).toBeGreaterThan(MAX_SYNC_PDF_BYTES);
    expect(png.byteLength).toBeLessThanOrEqual(DEFAULT_MAX_INLINE_BYTES);
    const completed = pool.stats().completed;
    const error = await expectCode(
      { body: { image: png.toString("base64"), options: { format: "pdf" } }, account, requestId: requestId(), pool },
      "payload_too_large",
    );
    expect(error.message).toMatch(/POST \/api\/ocr\/jobs/);
    expect(error.message).toMatch(/result\?format=pdf/);
    expect(pool.stats().completed).toBe(completed);
    const { entries } = await listLedger(getStore(), account.userId);
    expect(entries.map((entry) => entry.reason)).toEqual(["grant"]);
    expect(await account.balance()).toBe(5);
  });
});
