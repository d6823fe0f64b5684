import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ocrResponseSchema } from "@/lib/api-schemas";
import { listLedger } from "@/lib/credits";
import { ApiError, type ErrorCode } from "@/lib/errors";
import * as ocr from "@/lib/ocr";
import type { OpenedDocument } from "@/lib/ocr";
import { processDocument, type ProcessDocumentInput } from "@/lib/process";
import { createTestPool } from "../support/ocr";
import { base64Of, createAccount, tinyPng, withStore } from "./support";

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

async function expectCode(input: ProcessDocumentInput, code: ErrorCode): Promise<ApiError> {
  const error = await failure(processDocument(input));
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
    const result = await processDocument({ body: { image: tinyPng("MCP 5").toString("base64") }, account, requestId: requestId(), receivedAt });
    const response = ocrResponseSchema.strict().parse(result.response);
    expect(response).toMatchObject({ userId: account.userId, inputSource: "base64", creditsUsed: 1, pageCount: 1 });
    expect(response.processingTime).toBeGreaterThanOrEqual(250);
    expect(result.creditsRemaining).toBe(4);
    expect(await account.balance()).toBe(4);
  });

  it("validates its input like the route does (the MCP tool gets the same 400s)", async () => {
    const account = await createAccount(5);
    await expectCode({ body: { image: "AAAA", imageUrl: "https://files.example/a.png" }, account, requestId: requestId() }, "invalid_request");
    await expectCode({ body: { image: "AAAA", options: { format: "pdf" as "text" } }, account, requestId: requestId() }, "invalid_request");
    expect(await account.balance()).toBe(5);
  });

  it("a deadline passing during OCR → 504 timeout: the job is stopped (its process killed); reserved, then refunded in full", async () => {
    const account = await createAccount(5);
    const id = requestId();
    const stopped = pool.stats().stopped.timeout;
    await expectCode({ body: { image: base64Of(SLOW) }, account, requestId: id, pool, deadline: Date.now() + 2_000 }, "timeout");
    expect(pool.stats().stopped.timeout).toBe(stopped + 1);
    expect(await account.balance()).toBe(5);
    const { entries } = await listLedger(account.userId);
    expect(entries.slice(0, 2).map((entry) => [entry.reason, entry.delta, entry.requestId])).toEqual([
      ["refund", 1, id],
      ["ocr", -1, id],
    ]);
  });

  it("a deadline already past → 504 before anything is charged or recognized", async () => {
    const account = await createAccount(5);
    const before = pool.stats();
    await expectCode({ body: { image: base64Of("small-text.png") }, account, requestId: requestId(), pool, deadline: Date.now() - 1 }, "timeout");
    expect(pool.stats()).toMatchObject({ completed: before.completed, stopped: before.stopped });
    const { entries } = await listLedger(account.userId);
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
    const missing = await expectCode({ body: { image: pdf, options: { pages: "9" } }, account, requestId: requestId(), pool }, "invalid_request");
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
    const error = await expectCode({ body: { image: base64Of("scanned-3.pdf") }, account, requestId: requestId(), pool }, "insufficient_credits");
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
    const outcome = await processDocument({ body: { image: tinyPng().toString("base64") }, account, requestId: requestId() }).catch(
      (error: unknown) => error,
    );
    expect(outcome).toBeInstanceOf(TypeError);
    expect(await account.balance()).toBe(5);
  });

  it("cheap checks fail before the reservation: 415 leaves no ledger entry", async () => {
    const account = await createAccount(5);
    await expectCode({ body: { image: base64Of("hostile/gif.gif") }, account, requestId: requestId() }, "unsupported_media_type");
    const { entries } = await listLedger(account.userId);
    expect(entries.map((entry) => entry.reason)).toEqual(["grant"]);
  });
});
