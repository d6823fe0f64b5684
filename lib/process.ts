import { ocrRequestSchema, type InputSource, type OcrRequest, type OcrRequestInput, type OcrResponse } from "@/lib/api-schemas";
import { withTimeout } from "@/lib/async";
import { refundCredits, reserveCredits, settleCredits } from "@/lib/credits";
import { getEnv } from "@/lib/env";
import { ApiError, apiCode, checkDeadline, deadlineError, toApiError } from "@/lib/errors";
import { errorLabel } from "@/lib/error-log";
import { decodeBase64Input, fetchRemoteFile, type ResolveHost } from "@/lib/input";
import { acquireInFlight } from "@/lib/limits/in-flight";
import { documentConfidence, getOcrPool, openDocument, render, type OcrPool, type OpenedDocument } from "@/lib/ocr";
import { fromEngineError } from "@/lib/process-errors";
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
}

export interface ProcessDocumentResult {
  /** The 200 body (`ocrResponseSchema`). */
  response: OcrResponse;
  /** Balance after this request: REST sends it as `x-credits-remaining`. */
  creditsRemaining: number;
}

/**
 * The one use case both surfaces share (REST and the MCP tool): resolve the input (base64, data URL or URL) → open
 * the document and check it cheaply (type, size, pages, language: 4xx before anything is charged) → reserve one
 * credit per selected page (`402` when short, before any OCR) → extract before the deadline → render → settle with
 * the pages read. On any failure after the reservation, everything is refunded. Throws `ApiError`s with catalogued codes
 * (docs/api.md#errors): the engine's own errors are translated here, once (lib/process-errors.ts).
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
  const { bytes, inputSource } = await loadInput(body, deadline, input.resolveHost);
  checkDeadline(deadline);
  const document = await openDocument(bytes, {
    pages: body.options?.pages,
    language: body.options?.language,
    deadline,
    pool: input.pool,
  });
  try {
    checkDeadline(deadline);
    return await chargeAndExtract(document, { ...input, body, inputSource, receivedAt, deadline });
  } finally {
    await document.close().catch(() => undefined);
  }
}

async function loadInput(
  body: OcrRequest,
  deadline: number,
  resolveHost: ResolveHost | undefined,
): Promise<{ bytes: Uint8Array; inputSource: InputSource }> {
  if (body.image !== undefined) {
    return { bytes: decodeBase64Input(body.image, getEnv().MAX_INLINE_BYTES), inputSource: "base64" };
  }
  // The request deadline bounds the fetch too (its own limit, URL_FETCH_TIMEOUT_MS, answers 502 instead).
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new ApiError("timeout", "The request deadline passed while fetching imageUrl")),
    Math.max(0, deadline - Date.now()),
  );
  try {
    const file = await fetchRemoteFile(body.imageUrl!, { signal: controller.signal, resolveHost });
    return { bytes: file.bytes, inputSource: "url" };
  } finally {
    clearTimeout(timer);
  }
}

interface Work {
  body: OcrRequest;
  account: ProcessAccount;
  requestId: string;
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
      extractedText: render(extracted, work.body.options?.format ?? "text"),
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
  let creditsRemaining = reservation.balance;
  try {
    creditsRemaining = (await settleCredits({ ...ledger, reserved: pages, used: result.used })).balance;
  } catch (error) {
    console.error(`[${requestId}] settling ${result.used}/${pages} credits failed (${errorLabel(error, apiCode)})`);
  }
  result.response.processingTime = Math.max(0, Math.round(Date.now() - work.receivedAt));
  return { response: result.response, creditsRemaining };
}

/** `work`, or `504 timeout` at `by` if it has not settled (it goes on, and cleans up after itself). */
function answerByDeadline<T>(work: Promise<T>, by: number): Promise<T> {
  work.catch(() => undefined); // settled after the 504: its failure is already answered
  return withTimeout(work, Math.max(0, by - Date.now()), deadlineError);
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
