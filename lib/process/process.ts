import { ApiError, apiCode } from "@/lib/api/errors";
import type { InputSource, OcrResponse } from "@/lib/api/schemas";
import { refundCredits, reserveCredits, settleCredits } from "@/lib/credits";
import { errorLabel } from "@/lib/error-log";
import { documentConfidence, render, renderSearchablePdf, type OpenedDocument } from "@/lib/ocr";
import { MAX_SYNC_PDF_BYTES, type ExtractedDocument } from "@/lib/ocr/model";
import { throwIfEnded, type RequestScope } from "@/lib/request-scope";
import type { Store } from "@/lib/store";
import type { OutputFormat } from "@/lib/vocabulary";

/** Who pays: the account behind the key (REST and MCP alike). */
export interface ProcessAccount {
  userId: string;
  /** Recorded on ledger entries. */
  keyId?: string;
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

/** A document the intake opened (lib/intake) and decided to read now. */
export interface ReadNowInput {
  document: OpenedDocument;
  bytes: Uint8Array;
  inputSource: InputSource;
  format: OutputFormat;
  account: ProcessAccount;
  /** Unique per request: it keys the credit reservation and the ledger entries. */
  requestId: string;
  /** Epoch ms when the request arrived: the start of `processingTime`. */
  receivedAt: number;
  /** The request's scope (lib/request-scope.ts): its signal stops the reading, its deadline ends the reservation. */
  scope: RequestScope;
  /**
   * Leave the charge open, for the caller to keep or give back once it knows whether the answer reached the client
   * (`ProcessDocumentResult.charge`). Default false: settled here. The MCP SSE relay defers: its answer travels on a
   * stream that may be gone by the time the work is done.
   */
  deferSettlement?: boolean;
}

/**
 * Read an opened document now, for the answer: one credit reserved per selected page (`402` when short, before any
 * OCR) → extract and render → settle with the pages read. A failure after the reservation — the request's signal
 * aborting included (its deadline, or its client gone) — refunds everything. The caller closes the document.
 */
export async function readNow(store: Store, input: ReadNowInput): Promise<ProcessDocumentResult> {
  const { document, bytes, format, account, requestId, scope } = input;
  // The searchable PDF holds the file itself: one already past what an answer carries is refused before any charge.
  if (format === "pdf" && bytes.byteLength > MAX_SYNC_PDF_BYTES) throw syncPdfTooLarge(bytes.byteLength, "file");

  // The format goes on the ledger entries too, so a row can be matched to its request (the settings page).
  const ledger = { userId: account.userId, requestId, keyId: account.keyId, format };
  const pages = document.selectedPages.length;
  const reservation = await reserveCredits(store, { ...ledger, pages, deadline: scope.deadline });
  if (!reservation.ok) throw insufficientCredits(pages, reservation.balance);
  /** Give back every credit reserved. A store failure is logged, with what then becomes of the reservation. */
  const refund = async (what: string, then: string): Promise<void> => {
    try {
      await refundCredits(store, { ...ledger, pages });
    } catch (error) {
      console.error(`[${requestId}] refund of ${pages} ${what} failed (${errorLabel(error, apiCode)}); ${then}`);
    }
  };

  let response: OcrResponse;
  try {
    const extracted = await document.extract({ deadline: scope.deadline, signal: scope.signal });
    throwIfEnded(scope.signal);
    response = {
      success: true,
      userId: account.userId,
      inputSource: input.inputSource,
      extractedText: await renderText(extracted, document, format, bytes),
      confidence: documentConfidence(extracted),
      processingTime: 0,
      creditsUsed: Math.min(pages, extracted.pages.length),
      pageCount: document.pageCount,
      requestId,
    };
  } catch (error) {
    // Nothing is charged for a failed request (timeouts and cancellations included).
    await refund("credits", "the reservation stays open");
    throw error;
  }

  // The work is done and paid for by the reservation; settling only returns unused pages. If the store fails here
  // the answer still stands (the user paid at most what was reserved), and the log says what to reconcile.
  const used = response.creditsUsed;
  const settle = async (): Promise<number> => {
    try {
      return (await settleCredits(store, { ...ledger, reserved: pages, used })).balance;
    } catch (error) {
      console.error(`[${requestId}] settling ${used}/${pages} credits failed (${errorLabel(error, apiCode)})`);
      return reservation.balance;
    }
  };
  const elapsed = () => Math.max(0, Math.round(Date.now() - input.receivedAt));
  if (input.deferSettlement === true) {
    response.processingTime = elapsed();
    const undelivered = () => refund("undelivered credits", "the reservation sweep will refund them");
    return { response, creditsRemaining: reservation.balance, charge: { pages: used, settle, refund: undelivered } };
  }
  const creditsRemaining = await settle();
  response.processingTime = elapsed();
  return { response, creditsRemaining };
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

/** `413`: the PDF (or the file it would be built on) is larger than a synchronous answer carries. */
function syncPdfTooLarge(bytes: number, what: "file" | "pdf"): ApiError {
  const size = `${(bytes / 1e6).toFixed(1)} MB`;
  const limit = `${MAX_SYNC_PDF_BYTES / 1e6} MB`;
  const subject =
    what === "file" ? `The file is ${size}, and the searchable PDF holds it` : `The searchable PDF is ${size}`;
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
