import { z } from "zod";
import { MAX_IMAGE_URL_LENGTH, outputFormatSchema, type OcrRequestInput } from "@/lib/api/schemas";
import { toolInputSources } from "@/lib/vocabulary";
import { DEFAULT_SLICE_CHARS, GET_EXTRACTION, MAX_SLICE_CHARS, MIN_SLICE_CHARS } from "./jobs";

/*
 * What the model is told about the two tools: `extract_text`'s name, its input schema described field by field, and
 * the descriptions of `extract_text` and `get_extraction` that `tools/list` carries (`get_extraction`'s schemas are in
 * ./jobs.ts, beside the job text it reads). Also the mapping of `extract_text`'s arguments onto the REST request body
 * (`toOcrRequest`), so that a call runs the REST use case with its limits. ./server.ts registers the tools.
 */

export const TOOL_NAME = "extract_text";

/*
 * The tool's input (docs/mcp.md, the tools), described field by field for
 * the model. Strict objects like the REST body: an unknown or misspelt field is a malformed call, not ignored.
 */
const imageSourceSchema = z
  .strictObject({
    type: z
      .enum(toolInputSources)
      .describe(
        "How `data` carries the file: `base64` for the file's bytes in base64, `url` for a link the service downloads.",
      ),
    data: z
      .string()
      .min(1)
      .describe(
        "When type is `base64`: the file as base64 (standard or URL-safe alphabet, whitespace ignored) or as a data URL " +
          "(`data:application/pdf;base64,…`), at most 20 MB decoded (4 MB on Vercel). When type is `url`: an http(s) URL of the file on a " +
          `public host (at most 25 MB, 3 redirects, 15 s; ${MAX_IMAGE_URL_LENGTH} characters). Prefer base64 under 1 MB and a URL above.`,
      ),
    filename: z
      .string()
      .max(255)
      .optional()
      .describe(
        "Optional file name such as `invoice.pdf` or `scan.png`. Only a hint: the file type is decided from the bytes " +
          "(PDF, JPEG, PNG, WebP or TIFF), never from the name.",
      ),
  })
  .describe("The document or image to read: PDF, JPEG, PNG, WebP or TIFF.");

export const extractTextInputSchema = z.strictObject({
  image_source: imageSourceSchema,
  pages: z
    .string()
    .max(256)
    .optional()
    .describe(
      'PDF pages to read, 1-based: "1-5", "3,7-9", "10-" (to the end). Default: every page. Only those are charged. A scanned ' +
        "page takes about 2–6 s: a few pages per call answer at once; a longer selection is read as a job.",
    ),
  max_chars: z
    .number()
    .int()
    .min(MIN_SLICE_CHARS)
    .max(MAX_SLICE_CHARS)
    .optional()
    .describe(
      `Most characters of text in the answer (default ${DEFAULT_SLICE_CHARS}, at most ${MAX_SLICE_CHARS}). A longer text ` +
        `comes with a cursor: call ${GET_EXTRACTION} with it for the rest (free: the pages were charged once).`,
    ),
  output_format: outputFormatSchema
    .optional()
    .describe(
      "`text` (default), `markdown`, `json` (the OcrDocument), `hocr` (hOCR 1.2), `alto` (ALTO 4 XML), `tsv` " +
        "(Tesseract's TSV of words with boxes and confidences; boxes in pixels of the page as sent), or `pdf`: a " +
        "searchable PDF as base64 in `extractedText`, for files up to 3 MB (larger: the REST job route).",
    ),
});
export type ExtractTextInput = z.infer<typeof extractTextInputSchema>;

export const TOOL_DESCRIPTION =
  "Extract the text of a PDF, JPEG, PNG, WebP or TIFF file by OCR (PDF pages that carry a text layer are read directly). " +
  "Send the file as base64 or as a URL. The text comes back as plain text (default), Markdown (headings, paragraphs, " +
  "lists) or JSON (pages → blocks → lines → words, each with a 0–100 confidence and a bounding box normalized to the " +
  "page). Costs 1 credit per page read (an image is 1 page); the result reports creditsUsed, and nothing is charged " +
  'when it fails. `pages` reads only some pages of a PDF (e.g. "1-5"; only those are charged). ' +
  `An answer holds at most max_chars characters (default ${DEFAULT_SLICE_CHARS}): a longer text comes with a cursor ` +
  `(structuredContent.nextCursor, and the exact call in the answer's last line); call ${GET_EXTRACTION} with it for the ` +
  "rest, free. " +
  "Timing: an image or a scanned page takes about 2–6 s (a PDF page with a text layer far less), and a call must " +
  "finish in under 30 s (many MCP clients give up at 30 s). A document whose reading is not expected to fit the call " +
  "(by its pages' expected work, e.g. a scanned PDF of more than a few pages) is read as an asynchronous job instead: " +
  "the answer holds the text read so far, " +
  `names the job (structuredContent.job.jobId) and gives the exact ${GET_EXTRACTION} call that reads on, in slices, as ` +
  "its pages are read. Clients that support MCP tasks can also call this tool as a task (tasks/get, tasks/result, tasks/cancel).";

export const GET_EXTRACTION_DESCRIPTION =
  "Continue an extract_text answer: pass its cursor alone to get the next slice of a text longer than its max_chars. " +
  "Or read the text of a document that extract_text is reading (or has read) as an asynchronous job: the job's status " +
  `and progress, and the next slice of its text of at most max_chars characters (default 20000, at most ${MAX_SLICE_CHARS}), ` +
  "in page order. Pass the nextCursor of an answer as cursor to continue; it is null once every page asked for was " +
  "delivered. While the job is still reading, an answer holds the pages read so far and a cursor to come back with. " +
  "Free: the pages were paid when the job read them.";

/** Map the tool's arguments onto the REST request body that `processDocument` takes. */
export function toOcrRequest(input: ExtractTextInput): OcrRequestInput {
  const chosen = {
    ...(input.output_format && { format: input.output_format }),
    ...(input.pages !== undefined && { pages: input.pages }),
  };
  const options = Object.keys(chosen).length > 0 ? { options: chosen } : {};
  return input.image_source.type === "base64"
    ? { image: input.image_source.data, ...options }
    : { imageUrl: input.image_source.data, ...options };
}
