import { ocrRequestSchema, type InputSource, type OcrRequest, type OcrRequestInput, type OcrResponse } from "@/lib/api/schemas";
import { withTimeout } from "@/lib/async";
import { refundCredits, reserveCredits, settleCredits } from "@/lib/credits";
import { getEnv } from "@/lib/env";
import { ApiError, aboutField, apiCode, checkDeadline, deadlineError, toApiError } from "@/lib/api/errors";
import { errorLabel } from "@/lib/error-log";
import { decodeBase64Input, fetchRemoteFile, readOwnSample, type ResolveHost } from "@/lib/input";
import { acquireInFlight } from "@/lib/limits/in-flight";
import { documentConfidence, getOcrPool, MAX_SYNC_PDF_BYTES, openDocument, render, renderSearchablePdf, type ExtractedDocument, type OcrPool, type OpenedDocument } from "@/lib/ocr";
import { fromEngineError } from "./errors";
import { ANSWER_GRACE_MS, runWithDeadline } from "@/lib/request-scope";

/** Who pays: the account behind the key (REST and MCP alike). */
export interface ProcessAccount {
  userId: string;
  /** Recorded on ledger entries. */
  keyId?: string;
}

export interface ProcessDocumentInput {
  /** The request body; validated here again, so every caller gets the same 400s. */
  body: OcrRequestInput;
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
 * The one use case both surfaces share (REST and the MCP tool): resolve the input (base64, data URL or URL) → open
 * the document and check it cheaply (type, size, pages, language: 4xx before anything is charged) → reserve one
 * credit per selected page (`402` when short, before any OCR) → extract before the deadline → render → settle with
 * the pages read. On any failure after the reservation, everything is refunded. Throws `ApiError`s with catalogued codes
 * (docs/api.md#errors): the engine's own errors are translated here, once (lib/process/errors.ts).
 */
export async function processDocument(input: ProcessDocumentInput): Promise<ProcessDocumentResult> {
  const receivedAt = input.receivedAt ?? Date.now();
  const deadline = input.deadline ?? receivedAt + getEnv().REQUEST_DEADLINE_MS;
  const parsed = ocrRequestSchema.safeParse(input.body);
  if (!parsed.success) throw toApiError(parsed.error);
  const body = parsed.data;
  // Every step below is bounded by the deadline on its own (fetch aborted, engine jobs killed, store commands
  // capped); this is the backstop that answers `504` by the deadline plus the answer grace whatever happens, while
  // the work winds down (and refunds) behind it.
  try {
    return await runWithDeadline(deadline, () =>
      answerByDeadline(processWithinDeadline({ ...input, receivedAt, deadline }, body), deadline + ANSWER_GRACE_MS - 100),
    );
  } catch (error) {
    throw fromEngineError(error, { pages: body.options?.pages });
  }
}

async function processWithinDeadline(
  input: ProcessDocumentInput & { receivedAt: number; deadline: number },
  body: OcrRequest,
): Promise<ProcessDocumentResult> {
  const { receivedAt, deadline } = input;
  const pool = input.pool ?? getOcrPool();
  // One account cannot fill an instance: its requests in flight here are limited (429 past it).
  const release = acquireInFlight(input.account.userId, {
    retryAfterS: Math.max(1, Math.ceil(pool.estimate("read-image") / 1000)),
  });
  try {
    return await processAdmitted({ ...input, pool }, body, receivedAt, deadline);
  } finally {
    release();
  }
}

async function processAdmitted(
  input: ProcessDocumentInput & { pool: OcrPool },
  body: OcrRequest,
  receivedAt: number,
  deadline: number,
): Promise<ProcessDocumentResult> {
  const { bytes, inputSource } = await loadInput(body, deadline, input);
  checkDeadline(deadline);
  const document = await openDocument(bytes, {
    pages: body.options?.pages,
    language: body.options?.language,
    deadline,
    pool: input.pool,
    tenant: input.account.userId,
  });
  try {
    checkDeadline(deadline);
    // The searchable PDF holds the file itself: one already past what an answer carries is refused before any charge.
    if (body.options?.format === "pdf" && bytes.byteLength > MAX_SYNC_PDF_BYTES) throw syncPdfTooLarge(bytes.byteLength, "file");
    return await chargeAndExtract(document, { ...input, body, bytes, inputSource, receivedAt, deadline });
  } finally {
    await document.close().catch(() => undefined);
  }
}

async function loadInput(
  body: OcrRequest,
  deadline: number,
  { resolveHost, serverHost }: Pick<ProcessDocumentInput, "resolveHost" | "serverHost">,
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
  // The request deadline bounds the fetch too (its own limit, URL_FETCH_TIMEOUT_MS, answers 502 instead).
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new ApiError("timeout", "The request deadline passed while fetching imageUrl")),
    Math.max(0, deadline - Date.now()),
  );
  try {
    const file = await fetchRemoteFile(body.imageUrl!, { signal: controller.signal, resolveHost });
    return { bytes: file.bytes, inputSource: "url" };
  } catch (error) {
    throw aboutField(error, "imageUrl");
  } finally {
    clearTimeout(timer);
  }
}

interface Work {
  body: OcrRequest;
  deferSettlement?: boolean;
  account: ProcessAccount;
  requestId: string;
  /** The file: the searchable PDF is built on it. */
  bytes: Uint8Array;
  inputSource: InputSource;
  receivedAt: number;
  deadline: number;
  pool?: OcrPool;
}

async function chargeAndExtract(document: OpenedDocument, work: Work): Promise<ProcessDocumentResult> {
  const { account, requestId } = work;
  // The format goes on the ledger entries too, so a row can be matched to its request (the settings page).
  const ledger = { userId: account.userId, requestId, keyId: account.keyId, format: work.body.options?.format ?? "text" };
  const pages = document.selectedPages.length;

  const reservation = await reserveCredits({ ...ledger, pages, deadline: work.deadline });
  if (!reservation.ok) {
    throw new ApiError(
      "insufficient_credits",
      `Insufficient credits: this request needs ${plural(pages, "credit")} (${plural(pages, "page")}) and the balance is ${reservation.balance}`,
      { headers: { "x-credits-remaining": String(reservation.balance) } },
    );
  }

  let result: { response: OcrResponse; used: number };
  try {
    const extracted = await document.extract({ deadline: work.deadline });
    const used = Math.min(pages, extracted.pages.length);
    const response: OcrResponse = {
      success: true,
      userId: account.userId,
      inputSource: work.inputSource,
      extractedText: await renderText(extracted, document, work),
      confidence: documentConfidence(extracted),
      processingTime: 0,
      creditsUsed: used,
      pageCount: document.pageCount,
      requestId,
    };
    result = { response, used };
  } catch (error) {
    // Nothing is charged for a failed request (timeouts included).
    await refundCredits({ ...ledger, pages }).catch((refundError: unknown) =>
      console.error(`[${requestId}] refund of ${pages} credits failed (${errorLabel(refundError, apiCode)}); the reservation stays open`),
    );
    throw error;
  }

  // The work is done and paid for by the reservation; settling only returns unused pages. If the store fails here
  // the answer still stands (the user paid at most what was reserved), and the log says what to reconcile.
  const settle = async (): Promise<number> => {
    try {
      return (await settleCredits({ ...ledger, reserved: pages, used: result.used })).balance;
    } catch (error) {
      console.error(`[${requestId}] settling ${result.used}/${pages} credits failed (${errorLabel(error, apiCode)})`);
      return reservation.balance;
    }
  };
  const finish = () => Math.max(0, Math.round(Date.now() - work.receivedAt));
  if (work.deferSettlement !== true) {
    const creditsRemaining = await settle();
    result.response.processingTime = finish();
    return { response: result.response, creditsRemaining };
  }
  result.response.processingTime = finish();
  const refund = async (): Promise<void> => {
    await refundCredits({ ...ledger, pages }).catch((error: unknown) =>
      console.error(`[${requestId}] refund of ${pages} undelivered credits failed (${errorLabel(error, apiCode)}); the reservation sweep will refund them`),
    );
  };
  return { response: result.response, creditsRemaining: reservation.balance, charge: { pages: result.used, settle, refund } };
}

/** The answer's `extractedText`: a text format, or the searchable PDF as base64 when it fits an answer (else `413`). */
async function renderText(extracted: ExtractedDocument, document: OpenedDocument, work: Work): Promise<string> {
  const format = work.body.options?.format ?? "text";
  if (format !== "pdf") return render(extracted, format);
  const pdf = await renderSearchablePdf(extracted.pages, { bytes: work.bytes, type: document.type });
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

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
