import type { CallToolResult, McpServer } from "@modelcontextprotocol/server";
import { RESOURCE_MIME_TYPE, registerAppResource } from "@modelcontextprotocol/ext-apps/server";
import { z } from "zod";
import { ApiError, isApiError } from "@/lib/api/errors";
import type { Env } from "@/lib/env";
import { readJobPageImage, readJobPagesRead, readJobPageView, type JobPageView } from "@/lib/jobs";
import type { Store } from "@/lib/store";
import { cursorJobId } from "../extraction-slices";
import { GET_EXTRACTION } from "../jobs";
import { REVIEW_PAGES, describeReview, reviewSchema, reviewSummary } from "../review";
import { extractTextInputSchema } from "../tool-definitions";
import { VIEWER_HTML } from "./html";
import type { DeliveryQueue } from "@/lib/webhooks";
import type { Runtime } from "@/lib/jobs";

/*
 * The viewer (an MCP App, docs/mcp.md#the-viewer): the `ui://` resource with its HTML, `show_extraction` (the model's
 * tool that opens it on a job's document, or reads a document as a job and opens it) and `read_viewer_page` (the
 * view's own tool, hidden from the model: one page's words and its image). docs/decisions.md#viewer says why a
 * tool of its own rather than `_meta.ui` on `extract_text`.
 */

export const VIEWER_URI = "ui://ocr-service/viewer.html";
export const SHOW_EXTRACTION = "show_extraction";
export const VIEWER_PAGE = "read_viewer_page";

const pageNumber = z.number().int().min(1).max(100_000);
const jobId = z.string().min(1).max(100);

export const showExtractionInputSchema = z.strictObject({
  job_id: jobId
    .optional()
    .describe("The job to show: structuredContent.job.jobId of an extract_text answer read as a job, or a task's job."),
  cursor: z
    .string()
    .max(2000)
    .optional()
    .describe(`Instead of job_id: a nextCursor of ${GET_EXTRACTION} or extract_text that continues a job.`),
  page: pageNumber.optional().describe("The page to open (1-based). Default: the job's first page."),
  image_source: extractTextInputSchema.shape.image_source
    .optional()
    .describe(
      "Instead of job_id: a document to read and show (as extract_text's image_source). It is read as a job, charged " +
        "like extract_text (1 credit per page), and the view shows its pages as they are read.",
    ),
  pages: extractTextInputSchema.shape.pages,
});
export type ShowExtractionInput = z.infer<typeof showExtractionInputSchema>;

export const showExtractionOutputSchema = z.object({
  jobId: z.string(),
  status: z.string(),
  page: z.number().int(),
  pages: z.string().describe("the pages the job reads"),
  pagesTotal: z.number().int(),
  pagesDone: z.number().int(),
  review: reviewSchema,
});
type ShowExtractionOutput = z.infer<typeof showExtractionOutputSchema>;

export const viewerPageInputSchema = z.strictObject({
  job_id: jobId.describe("The job the view shows."),
  page: pageNumber.describe("The page (1-based)."),
});
export type ViewerPageInput = z.infer<typeof viewerPageInputSchema>;

export const viewerPageOutputSchema = z.object({
  jobId: z.string(),
  status: z.string(),
  page: z.number().int(),
  index: z.number().int().describe("1-based place of the page among the job's pages"),
  count: z.number().int(),
  previousPage: z.number().int().optional(),
  nextPage: z.number().int().optional(),
  pageStatus: z.enum(["done", "pending", "failed"]),
  content: z.looseObject({}).optional().describe("the page model (as the json format's pages), words marked review"),
  failure: z.object({ code: z.string(), message: z.string() }).optional(),
  image: z.object({ mimeType: z.string(), width: z.number().int(), height: z.number().int() }).optional(),
  imageError: z.string().optional(),
});
type ViewerPageOutput = z.infer<typeof viewerPageOutputSchema>;

export const SHOW_EXTRACTION_DESCRIPTION =
  "Show a document to the user in an interactive viewer (hosts with MCP Apps: the page image with each word's box " +
  "coloured by confidence, the text beside it, words that need a second look highlighted, paging). Pass the job_id " +
  `(or a ${GET_EXTRACTION}/extract_text cursor) of a document read as a job — free — or an image_source to read a ` +
  "document as a job and show it (charged like extract_text). The answer says how many words need a second look " +
  "(low confidence, or the two recognizers disagree) and where; tell the user to check those. Hosts without MCP " +
  "Apps get only that answer.";

export const VIEWER_PAGE_DESCRIPTION =
  "The viewer's own call (hidden from the model): one page of a job with its words and a scaled image of the page. Free.";

/** The `_meta` of `show_extraction`: the resource the host renders with its result. */
export const showExtractionMeta = { ui: { resourceUri: VIEWER_URI } };
/** The `_meta` of `read_viewer_page`: called by the view only. */
export const viewerPageMeta = { ui: { resourceUri: VIEWER_URI, visibility: ["app" as const] } };

/** The viewer's `ui://` resource, registered with ext-apps' helper (its MIME type `text/html;profile=mcp-app`). */
export function registerViewerResource(server: McpServer): void {
  const ui = { csp: { connectDomains: [], resourceDomains: [] }, prefersBorder: true };
  registerAppResource(
    server,
    "OCR viewer",
    VIEWER_URI,
    { description: "A document's pages with their words, confidences and what needs a second look", _meta: { ui } },
    () => ({ contents: [{ uri: VIEWER_URI, mimeType: RESOURCE_MIME_TYPE, text: VIEWER_HTML, _meta: { ui } }] }),
  );
}

/** The job `show_extraction` names (its `job_id`, or the job its cursor continues). */
export function jobToShow(input: ShowExtractionInput): string {
  const fromCursor = input.cursor !== undefined ? cursorJobId(input.cursor) : undefined;
  if (input.cursor !== undefined && fromCursor === undefined) {
    throw new ApiError(
      "invalid_request",
      "cursor: it continues a synchronous answer, whose document is not kept: pass image_source to read it as a job and show it",
    );
  }
  const chosen = input.job_id ?? fromCursor;
  if (chosen === undefined) throw new ApiError("invalid_request", "job_id, cursor or image_source: one is required");
  return chosen;
}

/** `show_extraction`'s answer on job `id`: where it stands and what needs a second look, for the model and the view. */
export async function showExtraction(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  id: string,
  page: number | undefined,
  note?: string,
): Promise<CallToolResult> {
  const view = await readJobPageView(store, env, deliveries, userId, id, page);
  const read = await readJobPagesRead(store, id, view.selected, REVIEW_PAGES);
  const structured: ShowExtractionOutput = {
    jobId: id,
    status: view.record.status,
    page: view.page,
    pages: view.record.selection,
    pagesTotal: view.record.pagesTotal,
    pagesDone: view.record.pagesDone,
    review: reviewSummary(read),
  };
  return { content: [{ type: "text", text: describeShown(structured, note) }], structuredContent: structured };
}

function describeShown(shown: ShowExtractionOutput, note?: string): string {
  const lines = [
    ...(note ? [note] : []),
    `The viewer shows job ${shown.jobId} (${shown.status}; pages ${shown.pages}, ${shown.pagesDone} of ` +
      `${shown.pagesTotal} read), opened at page ${shown.page}.`,
  ];
  lines.push(...describeReview(shown.review, "the viewer highlights them"));
  if (shown.status === "queued" || shown.status === "running") {
    lines.push(`Pages still being read appear in the viewer as they are read; ${GET_EXTRACTION} reads the text.`);
  }
  return lines.join("\n");
}

/** `read_viewer_page`: the page's words, and its image drawn from the job's stored file (never charged). */
export async function viewerPage(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  input: ViewerPageInput,
  options: { deadline: number; signal?: AbortSignal; pool: Runtime["pool"] },
): Promise<CallToolResult> {
  const view = await readJobPageView(store, env, deliveries, userId, input.job_id, input.page);
  const structured = pageAnswer(view);
  const content: CallToolResult["content"] = [
    { type: "text", text: `Page ${view.page} of job ${view.record.id}: ${view.status}.` },
  ];
  try {
    const image = await readJobPageImage(store, env, deliveries, userId, input.job_id, view.page, options);
    structured.image = { mimeType: image.mimeType, width: image.width, height: image.height };
    content.push({ type: "image", mimeType: image.mimeType, data: Buffer.from(image.bytes).toString("base64") });
  } catch (error) {
    if (!isApiError(error) || error.code === "internal_error") throw error;
    structured.imageError = error.message;
  }
  return { content, structuredContent: structured };
}

function pageAnswer(view: JobPageView): ViewerPageOutput {
  const index = view.selected.indexOf(view.page);
  const previousPage = view.selected[index - 1];
  const nextPage = view.selected[index + 1];
  return {
    jobId: view.record.id,
    status: view.record.status,
    page: view.page,
    index: index + 1,
    count: view.selected.length,
    ...(previousPage !== undefined && { previousPage }),
    ...(nextPage !== undefined && { nextPage }),
    pageStatus: view.status,
    ...(view.content && { content: view.content }),
    ...(view.failure && { failure: view.failure }),
  };
}
