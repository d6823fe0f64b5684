import { ApiError, aboutField, apiCode, checkDeadline, deadlineError, toApiError } from "@/lib/api/errors";
import { ocrRequestSchema, type InputSource, type OcrRequest, type OcrResponse } from "@/lib/api/schemas";
import { withTimeout } from "@/lib/async";
import { refundCredits, reserveCredits, settleCredits } from "@/lib/credits";
import { getEnv } from "@/lib/env";
import { errorLabel } from "@/lib/error-log";
import { decodeBase64Input, fetchRemoteFile, readOwnSample, type ResolveHost } from "@/lib/input";
import { documentConfidence, getOcrPool, openDocument, render, renderSearchablePdf, type OcrPool, type OpenedDocument } from "@/lib/ocr";
import { MAX_SYNC_PDF_BYTES, type ExtractedDocument } from "@/lib/ocr/model";
import { ANSWER_GRACE_MS, runWithDeadline } from "@/lib/request-scope";
import type { OutputFormat } from "@/lib/vocabulary";
import { fromEngineError } from "./errors";
import { acquireInFlight } from "./in-flight";

/** Who pays: the account behind the key (REST and MCP alike). */
export interface ProcessAccount {
  userId: string;
  /** Recorded on ledger entries. */
  keyId?: string;
}

export interface ProcessDocumentInput {
  /** The request body as received (JSON): validated here, once, so every caller gets the same 400s. */
  body: unknown;
  account: ProcessAccount;
  /** Unique per request: it keys the credit reservation and the ledger entries. */
  requestId: string;
  /** Epoch ms when the request arrived: the start of `processingTime` and of the deadline. Default: now. */
  receivedAt?: number;
  /** Epoch ms past which the work stops with `504 timeout` and nothing is charged. Default: `receivedAt + REQUEST_DEADLINE_MS`. */
  deadline?: number;
  /** OCR worker pool. Default: the process-wide pool (tests inject a small one). */
  pool?: OcrPool;
  /** DNS for `imageUrl`. Default: the system resolver (tests stand in for it). */
  resolveHost?: ResolveHost;
  /**
   * The host this request came to (its `Host` header). An `imageUrl` naming this host's own `/samples/<file>` is read
   * from the bundled file, not fetched (lib/input/own-samples.ts). Unset: every `imageUrl` is fetched.
   */
  serverHost?: string;
  /**
   * Leave the charge open, for the caller to keep or give back once it knows whether the answer reached the client
   * (`ProcessDocumentResult.charge`). Default false: settled here. The MCP SSE relay defers: its answer travels on a
   * stream that may be gone by the time the work is done.
   */
  deferSettlement?: boolean;
}

/**
 * The charge of a successful request whose settlement was deferred (`deferSettlement`). Call one of the two, once.
 * Neither throws: a store failure is logged, and the reservation then stays open until the reservation sweep gives
 * it back (lib/credits), so in doubt the client is not charged.
 */
export interface OpenCharge {
  /** Pages the answer charges (its `creditsUsed`). */
  pages: number;
  /** The answer was delivered: give back the unused pages and close the reservation. Resolves to the balance after. */
  settle(): Promise<number>;
  /** The answer could not be delivered: give back every credit reserved (a `refund` ledger entry with the request id). */
  refund(): Promise<void>;
}

export interface ProcessDocumentResult {
  /** The 200 body (`ocrResponseSchema`). */
  response: OcrResponse;
  /** Balance after this request: REST sends it as `x-credits-remaining`. With `deferSettlement`, before settling. */
  creditsRemaining: number;
  /** With `deferSettlement`: the charge, still to be settled or refunded. */
  charge?: OpenCharge;
}

/**
 * The one use case both surfaces share (REST and the MCP tool), read top to bottom in `readDocument`. Throws
 * `ApiError`s with catalogued codes (docs/api.md#errors): the engine's own errors are translated here, once
 * (lib/process/errors.ts).
 */
export async function processDocument(input: ProcessDocumentInput): Promise<ProcessDocumentResult> {
  const receivedAt = input.receivedAt ?? Date.now();
  const deadline = input.deadline ?? receivedAt + getEnv().REQUEST_DEADLINE_MS;
  const body = validBody(input.body);
  // Every step is bounded by the deadline on its own (the fetch aborted, engine jobs killed, store commands capped
  // through runWithDeadline); this is the backstop that answers `504` by the deadline plus the answer grace whatever
  // happens, while the work winds down (and refunds) behind it.
  try {
    return await runWithDeadline(deadline, () =>
      answerByDeadline(readDocument({ ...input, body, receivedAt, deadline }), deadline + ANSWER_GRACE_MS - 100),
    );
  } catch (error) {
    throw fromEngineError(error, { pages: body.options?.pages });
  }
}

/** The body, validated once, here, so every surface gets the same `400`s. */
function validBody(raw: unknown): OcrRequest {
  const parsed = ocrRequestSchema.safeParse(raw);
  if (!parsed.success) throw toApiError(parsed.error);
  if (parsed.data.webhook) {
    throw new ApiError("invalid_request", "webhook is for jobs: POST /api/ocr/jobs, or send Prefer: respond-async");
  }
  return parsed.data;
}

interface ValidRequest extends Omit<ProcessDocumentInput, "body" | "receivedAt" | "deadline"> {
  body: OcrRequest;
  receivedAt: number;
  deadline: number;
}

/**
 * One request, in order: a slot of the account's requests in flight → the file (base64, data URL or URL) → the
 * document opened and checked cheaply (type, size, pages, language: 4xx before anything is charged) → one credit
 * reserved per selected page (`402` when short, before any OCR) → extract and render → settle with the pages read.
 * A failure after the reservation refunds everything; the document is closed and the slot released whatever happens.
 */
async function readDocument(request: ValidRequest): Promise<ProcessDocumentResult> {
  const { body, account, requestId, deadline } = request;
  const format = body.options?.format ?? "text";
  const pool = request.pool ?? getOcrPool();

  // One account cannot fill an instance: its requests in flight here are limited (429 past it).
  const retryAfterS = Math.max(1, Math.ceil(pool.estimate("read-image") / 1000));
  using _inFlight = onDispose(acquireInFlight(account.userId, { retryAfterS }));

  const { bytes, inputSource } = await loadInput(body, request, AbortSignal.timeout(Math.max(0, deadline - Date.now())));
  checkDeadline(deadline);
  const { pages: pageRange, language } = body.options ?? {};
  const document = await openDocument(bytes, { pages: pageRange, language, deadline, pool, tenant: account.userId });
  await using _closed = onAsyncDispose(() => document.close().catch(() => undefined));
  checkDeadline(deadline);
  // The searchable PDF holds the file itself: one already past what an answer carries is refused before any charge.
  if (format === "pdf" && bytes.byteLength > MAX_SYNC_PDF_BYTES) throw syncPdfTooLarge(bytes.byteLength, "file");

  // The format goes on the ledger entries too, so a row can be matched to its request (the settings page).
  const ledger = { userId: account.userId, requestId, keyId: account.keyId, format };
  const pages = document.selectedPages.length;
  const reservation = await reserveCredits({ ...ledger, pages, deadline });
  if (!reservation.ok) throw insufficientCredits(pages, reservation.balance);
  /** Give back every credit reserved. A store failure is logged, with what then becomes of the reservation. */
  const refund = async (what: string, then: string): Promise<void> => {
    try {
      await refundCredits({ ...ledger, pages });
    } catch (error) {
      console.error(`[${requestId}] refund of ${pages} ${what} failed (${errorLabel(error, apiCode)}); ${then}`);
    }
  };

  let response: OcrResponse;
  try {
    const extracted = await document.extract({ deadline });
    response = {
      success: true,
      userId: account.userId,
      inputSource,
      extractedText: await renderText(extracted, document, format, bytes),
      confidence: documentConfidence(extracted),
      processingTime: 0,
      creditsUsed: Math.min(pages, extracted.pages.length),
      pageCount: document.pageCount,
      requestId,
    };
  } catch (error) {
    // Nothing is charged for a failed request (timeouts included).
    await refund("credits", "the reservation stays open");
    throw error;
  }

  // The work is done and paid for by the reservation; settling only returns unused pages. If the store fails here
  // the answer still stands (the user paid at most what was reserved), and the log says what to reconcile.
  const used = response.creditsUsed;
  const settle = async (): Promise<number> => {
    try {
      return (await settleCredits({ ...ledger, reserved: pages, used })).balance;
    } catch (error) {
      console.error(`[${requestId}] settling ${used}/${pages} credits failed (${errorLabel(error, apiCode)})`);
      return reservation.balance;
    }
  };
  const elapsed = () => Math.max(0, Math.round(Date.now() - request.receivedAt));
  if (request.deferSettlement === true) {
    response.processingTime = elapsed();
    const undelivered = () => refund("undelivered credits", "the reservation sweep will refund them");
    return { response, creditsRemaining: reservation.balance, charge: { pages: used, settle, refund: undelivered } };
  }
  const creditsRemaining = await settle();
  response.processingTime = elapsed();
  return { response, creditsRemaining };
}

/** The file's bytes. `signal` aborts a fetch at the request's deadline (`URL_FETCH_TIMEOUT_MS` answers 502 instead). */
async function loadInput(
  body: OcrRequest,
  { resolveHost, serverHost }: Pick<ProcessDocumentInput, "resolveHost" | "serverHost">,
  signal: AbortSignal,
): Promise<{ bytes: Uint8Array; inputSource: InputSource }> {
  // lib/input's messages name the field they were given (`image`, `imageUrl`); the errors say so for other surfaces.
  if (body.image !== undefined) {
    try {
      return { bytes: decodeBase64Input(body.image, getEnv().MAX_INLINE_BYTES), inputSource: "base64" };
    } catch (error) {
      throw aboutField(error, "image");
    }
  }
  const sample = await readOwnSample(body.imageUrl!, serverHost);
  if (sample) return { bytes: sample, inputSource: "url" };
  try {
    const file = await fetchRemoteFile(body.imageUrl!, { signal, resolveHost });
    return { bytes: file.bytes, inputSource: "url" };
  } catch (error) {
    throw aboutField(error, "imageUrl");
  }
}

/** A `using` declaration that calls `release` when its block ends. */
function onDispose(release: () => void): Disposable {
  return { [Symbol.dispose]: release };
}

/** An `await using` declaration that awaits `close` when its block ends. */
function onAsyncDispose(close: () => Promise<unknown>): AsyncDisposable {
  return {
    [Symbol.asyncDispose]: async () => {
      await close();
    },
  };
}

/** The answer's `extractedText`: a text format, or the searchable PDF as base64 when it fits an answer (else `413`). */
async function renderText(
  extracted: ExtractedDocument,
  document: OpenedDocument,
  format: OutputFormat,
  bytes: Uint8Array,
): Promise<string> {
  if (format !== "pdf") return render(extracted, format);
  const pdf = await renderSearchablePdf(extracted.pages, { bytes, type: document.type });
  if (pdf.byteLength > MAX_SYNC_PDF_BYTES) throw syncPdfTooLarge(pdf.byteLength, "pdf");
  return Buffer.from(pdf).toString("base64");
}

/** `work`, or `504 timeout` at `by` if it has not settled (it goes on, and cleans up after itself). */
function answerByDeadline<T>(work: Promise<T>, by: number): Promise<T> {
  work.catch(() => undefined); // settled after the 504: its failure is already answered
  return withTimeout(work, Math.max(0, by - Date.now()), deadlineError);
}

/** `413`: the PDF (or the file it would be built on) is larger than a synchronous answer carries. */
function syncPdfTooLarge(bytes: number, what: "file" | "pdf"): ApiError {
  const size = `${(bytes / 1e6).toFixed(1)} MB`;
  const limit = `${MAX_SYNC_PDF_BYTES / 1e6} MB`;
  const subject = what === "file" ? `The file is ${size}, and the searchable PDF holds it` : `The searchable PDF is ${size}`;
  return new ApiError(
    "payload_too_large",
    `${subject}; a synchronous answer carries a PDF of at most ${limit} (base64 under the 4.5 MB response limit). ` +
      "Send it as a job (POST /api/ocr/jobs with the same body) and download GET /api/ocr/jobs/{id}/result?format=pdf, " +
      "which streams application/pdf. Nothing was charged.",
  );
}

/** `402`: the balance is short of one credit per selected page. */
function insufficientCredits(pages: number, balance: number): ApiError {
  return new ApiError(
    "insufficient_credits",
    `Insufficient credits: this request needs ${plural(pages, "credit")} (${plural(pages, "page")}) and the balance is ${balance}`,
    { headers: { "x-credits-remaining": String(balance) } },
  );
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
