import { ApiError } from "@/lib/api/errors";
import type { InputSource, OcrResponse } from "@/lib/api/schemas";
import { openInlineJob, type JobSettings } from "@/lib/jobs";
import { documentConfidence, render, renderSearchablePdf, type OpenedDocument } from "@/lib/ocr";
import { MAX_SYNC_PDF_BYTES, type ExtractedDocument, type ExtractedPage } from "@/lib/ocr/model";
import { ScopeEnded, throwIfEnded, type RequestScope } from "@/lib/request-scope";
import type { Store } from "@/lib/store";
import type { OutputFormat } from "@/lib/vocabulary";

/** Who pays: the account behind the key (REST and MCP alike). */
export interface ProcessAccount {
  userId: string;
  /** Recorded on ledger entries. */
  keyId?: string;
}

export interface ProcessDocumentResult {
  /** The 200 body (`ocrResponseSchema`). */
  response: OcrResponse;
  /** Balance after this request: REST sends it as `x-credits-remaining`. */
  creditsRemaining: number;
  /** The job it was read as (lib/jobs/inline.ts): its pages stay readable as the job's results. */
  jobId: string;
  /** The pages read (their words: MCP tells the model which need a second look). */
  pages: ExtractedPage[];
}

/** A caller that may cancel a read from elsewhere (MCP's `notifications/cancelled`, a closed stream): a job cancel. */
export interface InlineWatch {
  /**
   * The read's job was created (awaited before the read: a cancel may name it from then on). Cancelling it
   * (`cancelJob`) stops the read, and nothing is charged. Should not throw.
   */
  opened(jobId: string): Promise<void>;
  /** How often the read looks at its job while it runs. */
  pollMs: number;
}

/** A document the intake opened (lib/intake) and decided to read now. */
export interface ReadNowInput {
  document: OpenedDocument;
  bytes: Uint8Array;
  inputSource: InputSource;
  format: OutputFormat;
  account: ProcessAccount;
  /** Unique per request: the job's `requestId`, and the id its ledger entries name. */
  requestId: string;
  /** Epoch ms when the request arrived: the start of `processingTime`. */
  receivedAt: number;
  /** The jobs' settings: how long its pages are kept, this process's name on them. */
  settings: Pick<JobSettings, "resultTtlMs" | "workerName">;
  /** This process's name on the pages it reads (`readBy`). */
  name: string;
  /** The request's scope (lib/request-scope.ts): its signal stops the reading, its deadline ends the reservation. */
  scope: RequestScope;
  /** Watch the read's job, so that a cancel of it stops the read (MCP). Unset: no looks (REST). */
  watch?: InlineWatch;
}

/**
 * Read an opened document now, for the answer, as a job read in its request (lib/jobs/inline.ts): created with one
 * credit reserved per selected page (`402` when short, before any OCR) → extract and render → its pages stored and
 * charged, and the job ended, in one step. A failure after the reservation — the request's signal aborting included
 * (its deadline, or its client gone) — ends the job with everything refunded. The caller closes the document.
 */
export async function readNow(store: Store, input: ReadNowInput): Promise<ProcessDocumentResult> {
  const { document, bytes, format, account, requestId, scope } = input;
  // The searchable PDF holds the file itself: one already past what an answer carries is refused before any charge.
  if (format === "pdf" && bytes.byteLength > MAX_SYNC_PDF_BYTES) throw syncPdfTooLarge(bytes.byteLength, "file");

  const job = await openInlineJob(store, {
    document,
    bytes,
    inputSource: input.inputSource,
    format,
    account,
    requestId,
    deadline: scope.deadline,
    settings: input.settings,
    name: input.name,
  });
  await input.watch?.opened(job.id);
  const watched = input.watch ? job.watch(input.watch.pollMs) : undefined;
  const signal = watched ? AbortSignal.any([scope.signal, watched.signal]) : scope.signal;
  let response: OcrResponse;
  let extracted: ExtractedDocument;
  try {
    extracted = await document.extract({ deadline: scope.deadline, signal });
    if (watched?.signal.aborted) throw new ScopeEnded("cancelled");
    throwIfEnded(scope.signal);
    response = {
      success: true,
      userId: account.userId,
      inputSource: input.inputSource,
      extractedText: await renderText(extracted, document, format, bytes),
      confidence: documentConfidence(extracted),
      processingTime: 0,
      creditsUsed: Math.min(document.selectedPages.length, extracted.pages.length),
      pageCount: document.pageCount,
      requestId,
    };
  } catch (error) {
    // Nothing is charged for a failed request (timeouts and cancellations included).
    await job.fail(error);
    throw watched?.signal.aborted ? new ScopeEnded("cancelled") : error;
  } finally {
    watched?.stop();
  }

  // The work is done and paid for by the reservation; finishing stores the pages (each one credit) and ends the job.
  // If the store fails here the answer still stands, and the sweeper refunds the reservation at the deadline. A job
  // cancelled meanwhile stores nothing: its answer is not wanted, and nothing is charged.
  const creditsRemaining = await job.finish(extracted.pages, document.language);
  if (creditsRemaining === null) throw new ScopeEnded("cancelled");
  response.processingTime = Math.max(0, Math.round(Date.now() - input.receivedAt));
  return { response, creditsRemaining, jobId: job.id, pages: extracted.pages };
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
