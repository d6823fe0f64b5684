import type { CallToolResult } from "@modelcontextprotocol/server";
import { errorCatalogue, errorCodes, type ErrorCode, type ErrorEntry } from "@/lib/api/error-catalogue";
import { readJobResult, type JobView } from "@/lib/jobs";
import type { Env } from "@/lib/env";
import type { Store } from "@/lib/store";
import { readExtractionSlice, readJobText } from "./extraction-slices";
import { GET_EXTRACTION, describeJob, isJobActive, plural, type ExtractTextOutput, type JobSummary } from "./jobs";
import type { DeliveryQueue } from "@/lib/webhooks";

/*
 * A job's answer to a tool call, as the `CallToolResult` the model reads: what `extract_text` answers for a document
 * read as a job (the first slice of its text within `max_chars`, where the job stands, and the exact next call), what
 * `tasks/result` returns for a task (its text once it has ended), and a failed or cancelled job as the tool error the
 * model can act on (the catalogued code first). The text itself comes from ./extraction-slices.ts.
 */

/**
 * What `extract_text` answers (or `tasks/result` returns) for a job: its text once it has ended, or — still reading —
 * where it stands and the next step. `userId` owns it. With `maxChars` (an `extract_text` call) the answer holds at
 * most that many characters of text — the pages read so far, in order, when the job is still reading — and the cursor
 * `get_extraction` continues from; without it (`tasks/result`), the first result part of a finished job.
 */
export async function jobToolResult(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  view: JobView,
  opening: string,
  maxChars?: number,
): Promise<CallToolResult> {
  if (view.status === "failed" || view.status === "cancelled") return jobFailureResult(view);
  if (maxChars !== undefined) return jobSliceResult(store, env, deliveries, userId, view, opening, maxChars);
  const summary: JobSummary = {
    jobId: view.jobId,
    status: view.status,
    pagesTotal: view.pagesTotal,
    pagesDone: view.pagesDone,
    pagesFailed: view.pagesFailed,
  };
  const base = {
    success: true as const,
    userId,
    inputSource: view.inputSource,
    pageCount: view.pageCount,
    requestId: view.jobId,
    creditsUsed: view.creditsUsed,
  };
  if (isJobActive(view)) {
    const next = `Call ${GET_EXTRACTION} with {"job_id": "${view.jobId}"} to read its text: it returns the pages read so far in slices that fit your context, and where to continue; call it again for the pages still being read.`;
    const text = `${opening} It is being read as job ${view.jobId}: ${describeJob(view)}. ${next}`;
    const structured: ExtractTextOutput = {
      ...base,
      extractedText: "",
      confidence: 0,
      processingTime: elapsed(view),
      job: summary,
    };
    return { content: [{ type: "text", text }], structuredContent: structured };
  }
  const { part, nextCursor } = await readJobText(store, env, deliveries, userId, view);
  const structured: ExtractTextOutput = {
    ...base,
    extractedText: part.extractedText,
    confidence: part.confidence,
    processingTime: elapsed(view),
    job: { ...summary, ...(nextCursor !== null && { nextCursor }) },
  };
  const notes: string[] = [];
  const failed = part.missingPages.filter((page) => page.status === "failed");
  if (failed.length > 0)
    notes.push(
      `${plural(failed.length, "page")} could not be read and were not charged: ${failed.map((page) => `${page.page} (${page.code ?? "internal_error"})`).join(", ")}.`,
    );
  if (view.format === "pdf") notes.push(pdfNote(view));
  if (nextCursor !== null)
    notes.push(
      `The text goes on: call ${GET_EXTRACTION} with {"job_id": "${view.jobId}", "cursor": "${nextCursor}"} for the rest.`,
    );
  const content: CallToolResult["content"] = [{ type: "text", text: part.extractedText }];
  if (notes.length > 0) content.push({ type: "text", text: `[job ${view.jobId}] ${notes.join(" ")}` });
  return { content, structuredContent: structured };
}

function pdfNote(view: JobView): string {
  return `The text above is plain text; the searchable PDF is a file: GET /api/ocr/jobs/${view.jobId}/result?format=pdf (application/pdf, with the same API key).`;
}

/**
 * A job's answer to `extract_text` within `maxChars`: the first slice of its text (as `get_extraction` would give it:
 * the pages read so far, in order), the job and its progress, and the exact next call.
 */
async function jobSliceResult(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  view: JobView,
  opening: string,
  maxChars: number,
): Promise<CallToolResult> {
  const slice = await readExtractionSlice(store, env, deliveries, userId, { job_id: view.jobId, max_chars: maxChars });
  const active = slice.status === "queued" || slice.status === "running";
  const confidence =
    slice.pages === ""
      ? 0
      : (await readJobResult(store, env, deliveries, userId, view.jobId, { format: slice.format, pages: slice.pages }))
          .confidence;
  const structured: ExtractTextOutput = {
    success: true,
    userId,
    inputSource: view.inputSource,
    extractedText: slice.text,
    confidence,
    processingTime: elapsed(view),
    creditsUsed: slice.creditsUsed,
    pageCount: view.pageCount,
    requestId: view.jobId,
    job: {
      jobId: view.jobId,
      status: slice.status,
      pagesTotal: slice.pagesTotal,
      pagesDone: slice.pagesDone,
      pagesFailed: slice.pagesFailed,
      ...(slice.nextCursor !== null && { nextCursor: slice.nextCursor }),
    },
  };
  const here =
    slice.pages === ""
      ? ""
      : `The text above is page${slice.pages.includes("-") || slice.pages.includes(",") ? "s" : ""} ${slice.pages}${slice.nextCursor !== null ? (active ? ", read so far" : `, at most ${maxChars} characters`) : ""}. `;
  const failed =
    slice.failedPages.length > 0
      ? `Passed over (could not be read, not charged): ${slice.failedPages.map((page) => `${page.page} (${page.code})`).join(", ")}. `
      : "";
  const pdf = view.format === "pdf" ? `${pdfNote(view)} ` : "";
  let next: string;
  if (slice.nextCursor === null) next = "That is all of its text.";
  else if (active && slice.pages === "") {
    next = `Call ${GET_EXTRACTION} with {"job_id": "${view.jobId}"} to read its text: it returns the pages read so far in slices that fit your context, and where to continue; call it again for the pages still being read.`;
  } else {
    next = `Call ${GET_EXTRACTION} with {"job_id": "${view.jobId}", "cursor": "${slice.nextCursor}"} for the rest${active ? " (the pages not read yet come as they are read: call again in a few seconds when an answer has none)" : ""}.`;
  }
  const lead = opening === "" ? "" : `${opening} `;
  const status = active
    ? `${lead}It is being read as job ${view.jobId}: ${describeJob({ ...view, status: slice.status, pagesDone: slice.pagesDone, pagesFailed: slice.pagesFailed })}. `
    : `[job ${view.jobId}] `;
  const line = `${status}${here}${failed}${pdf}${next}`;
  const content: CallToolResult["content"] = slice.text === "" ? [] : [{ type: "text", text: slice.text }];
  if (active || slice.nextCursor !== null || failed !== "" || pdf !== "") content.push({ type: "text", text: line });
  if (content.length === 0) content.push({ type: "text", text: "" });
  return { content, structuredContent: structured };
}

/** A job that failed or was cancelled, as the tool error the model can act on (the code first, as every tool error). */
export function jobFailureResult(view: JobView): CallToolResult {
  const code = view.status === "cancelled" ? "cancelled" : (view.error?.code ?? "internal_error");
  const entry: ErrorEntry | undefined = (errorCodes as readonly string[]).includes(code)
    ? errorCatalogue[code as ErrorCode]
    : undefined;
  const hint = entry?.hint;
  const message =
    view.status === "cancelled"
      ? `Job ${view.jobId} was cancelled: ${view.pagesDone} of ${plural(view.pagesTotal, "page")} had been read (charged), ${plural(view.creditsRefunded, "credit")} refunded.`
      : `Job ${view.jobId} failed: ${view.error?.message ?? "no page could be read"}.`;
  return { content: [{ type: "text", text: `${code}: ${message}${hint ? ` Hint: ${hint}` : ""}` }], isError: true };
}

function elapsed(view: JobView): number {
  const end = view.finishedAt ? Date.parse(view.finishedAt) : Date.now();
  return Math.max(0, Math.round(end - Date.parse(view.createdAt)));
}
