import { z } from "zod";
import { inputSources, outputFormats } from "@/lib/vocabulary";

/*
 * The REST request and response, as zod schemas. The route parses with them, `lib/api-docs/openapi.ts` describes the API
 * from them (`z.toJSONSchema`), the MCP tool maps its arguments onto `OcrRequest`, and the CLI reads the service's
 * answers with them. Imports stay light (zod and lib/vocabulary.ts, never the engine) so the CLI can bundle them.
 */

/** Longest `imageUrl` accepted. Browsers and CDNs stop around 8 KiB too. */
export const MAX_IMAGE_URL_LENGTH = 8192;

const listKeys = (keys: readonly string[]) => keys.map((key) => `"${key.slice(0, 40)}"`).join(", ");

/** A readable message for unknown keys, with the allowed ones, so a typo (`fromat`) says how to fix it. */
function unknownKeys(allowed: readonly string[]) {
  return (issue: { code?: string; keys?: string[] }) => {
    if (issue.code !== "unrecognized_keys" || !issue.keys) return undefined;
    const shown = issue.keys.slice(0, 5);
    const more = issue.keys.length > shown.length ? ` and ${issue.keys.length - shown.length} more` : "";
    return `Unknown field${issue.keys.length === 1 ? "" : "s"} ${listKeys(shown)}${more}; allowed: ${allowed.join(", ")}`;
  };
}

export const outputFormatSchema = z
  .enum(outputFormats)
  .describe(
    "`text` (default): plain text, pages separated by a form feed `\\f`. `markdown`: headings, paragraphs and lists " +
      "reconstructed from the layout, pages separated by `\\n\\n---\\n\\n`. `json`: the OcrDocument serialized, so " +
      "`JSON.parse(extractedText)` gives it. `hocr`: hOCR 1.2 (XHTML: ocr_page, ocr_carea, ocr_par, ocr_line, ocrx_word " +
      "with bbox and x_wconf). `alto`: ALTO 4 XML (Page, PrintSpace, TextBlock, TextLine, String with HPOS/VPOS/WIDTH/" +
      "HEIGHT and WC 0–1). `tsv`: Tesseract's TSV (level, page_num, block_num, par_num, line_num, word_num, left, top, " +
      "width, height, conf, text). Word boxes of hocr, alto and tsv are in pixels of the page as it was sent. `pdf`: a " +
      "searchable PDF (each scanned page's image with an invisible text layer on the words; pages with their own text " +
      "layer copied as they are), as base64 in `extractedText` when it is at most 3 MB (4 MB of base64, under the 4.5 MB " +
      "response limit), otherwise `413`: send it as a job and download `GET /api/ocr/jobs/{id}/result?format=pdf`.",
  );

const OPTION_KEYS = ["format", "language", "pages"] as const;

export const ocrOptionsSchema = z.strictObject(
  {
    format: outputFormatSchema.optional(),
    language: z
      .string()
      .max(100)
      .optional()
      .describe(
        "Tesseract language codes joined by `+`, e.g. `eng` or `eng+deu`, from the installed ones (`eng, fra, deu, " +
          "spa, ita, por, nld` by default, `OCR_LANGUAGES`). Default `auto`: " +
          "English, re-read in another installed language when the text is clearly in it.",
      ),
    pages: z
      .string()
      .max(256)
      .optional()
      .describe(
        'PDF or TIFF pages to read, 1-based: `"1-3,5"`, `"7-"` (to the end). Default: every page. Only those are ' +
          "read and charged. A page that does not exist is a `400`.",
      ),
  },
  { error: unknownKeys(OPTION_KEYS) },
);
export type OcrOptions = z.infer<typeof ocrOptionsSchema>;

/** Longest webhook URL accepted. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

const WEBHOOK_KEYS = ["url"] as const;

/** A job's `webhook`: where its end is announced (docs/api.md#webhooks). */
export const webhookRequestSchema = z
  .strictObject(
    {
      url: z
        .string()
        .max(MAX_WEBHOOK_URL_LENGTH)
        .meta({
          format: "uri",
          description:
            "An https URL (http only for a host in `URL_ALLOW_HOSTS`) that receives `job.succeeded`, `job.failed` or " +
            "`job.cancelled`, signed per Standard Webhooks with the account's secret. Public addresses only, as `imageUrl`.",
        }),
    },
    { error: unknownKeys(WEBHOOK_KEYS) },
  )
  .describe(
    "Jobs only (`POST /api/ocr/jobs`, or `Prefer: respond-async`). Default: the account's default webhook URL, if set.",
  );
export type WebhookRequest = z.infer<typeof webhookRequestSchema>;

const REQUEST_KEYS = ["image", "imageUrl", "options", "webhook"] as const;

/** `POST /api/ocr/process` body: exactly one of `image` / `imageUrl`; unknown keys are rejected so typos surface. */
export const ocrRequestSchema = z
  .strictObject(
    {
      image: z
        .string()
        .optional()
        .describe(
          "The file as base64 (standard or URL-safe alphabet, whitespace ignored, padding optional) or as a data URL " +
            "(`data:application/pdf;base64,…`). PDF, JPEG, PNG, WebP or TIFF, decided from the bytes. At most `MAX_INLINE_BYTES` " +
            "decoded (20 MB self-hosted, 4 MB on Vercel, where a JSON body stops at 4.5 MB: about 3.3 MB of file as base64). " +
            "Larger files: send the file itself (multipart/form-data or a raw body), or imageUrl.",
        ),
      imageUrl: z.string().max(MAX_IMAGE_URL_LENGTH).optional().meta({
        format: "uri",
        description:
          "An http(s) URL of the file; fetched by the service (public addresses only, at most 3 redirects, 15 s, 25 MB).",
      }),
      options: ocrOptionsSchema.optional(),
      webhook: webhookRequestSchema.optional(),
    },
    { error: unknownKeys(REQUEST_KEYS) },
  )
  .refine((body) => (body.image === undefined) !== (body.imageUrl === undefined), {
    error: (issue) => {
      const body = issue.input as { image?: unknown; imageUrl?: unknown } | undefined;
      return body?.image !== undefined && body?.imageUrl !== undefined
        ? "Send either image or imageUrl, not both"
        : "Send the file as image (base64 or data URL) or imageUrl";
    },
  })
  .meta({
    description: "Exactly one of `image` (base64 or data URL) and `imageUrl`.",
    oneOf: [{ required: ["image"] }, { required: ["imageUrl"] }],
  });
export type OcrRequest = z.infer<typeof ocrRequestSchema>;
export type OcrRequestInput = z.input<typeof ocrRequestSchema>;

/**
 * What comes with a file sent itself (a multipart `file` field or a raw body, lib/http/upload.ts): the options (form
 * fields or query parameters `format`, `language`, `pages`) and, for jobs, `webhook`.
 */
export const ocrUploadSchema = z.strictObject(
  { options: ocrOptionsSchema.optional(), webhook: webhookRequestSchema.optional() },
  { error: unknownKeys(["options", "webhook"]) },
);

const inputSourceSchema = z.enum(inputSources);
export type InputSource = z.infer<typeof inputSourceSchema>;

/**
 * The 200 answer. `success` to `creditsUsed` are the service's original fields, whose names and types clients rely
 * on; `pageCount` and `requestId` were added after.
 */
export const ocrResponseSchema = z.object({
  success: z.literal(true),
  userId: z.string().describe("The account that owns the key (`usr_…`)."),
  inputSource: inputSourceSchema.describe(
    "`base64` for `image`, `url` for `imageUrl`, `upload` for a file sent itself (multipart `file` or a raw body).",
  ),
  extractedText: z
    .string()
    .describe(
      "Always a string, in the requested format. `text`: plain text, pages separated by a form feed `\\f`. " +
        "`markdown`: headings, paragraphs (lines the document ended, such as an invoice's item rows, end with a " +
        "Markdown hard break: two spaces and a newline), lists and simple ruled or aligned tables (as GitHub tables, " +
        "first row as header) reconstructed from the layout, pages separated by `\\n\\n---\\n\\n`. `json`: the " +
        "OcrDocument serialized, so `JSON.parse(extractedText)` gives it. `hocr`, `alto`, `tsv`: the documents of " +
        "their formats. `pdf`: the searchable PDF as base64.",
    ),
  confidence: z
    .number()
    .min(0)
    .max(100)
    .describe(
      "0–100: the character-weighted mean of word confidences; a PDF page read from its text layer counts as 100.",
    ),
  processingTime: z.number().int().min(0).describe("Milliseconds from request received to response ready."),
  creditsUsed: z
    .number()
    .int()
    .min(0)
    .describe(
      "One credit per page read: 1 for an image, the pages processed for a PDF or TIFF. Failed requests are never charged.",
    ),
  pageCount: z
    .number()
    .int()
    .min(1)
    .describe("Pages in the file (a PDF or TIFF may have more than were read, see `options.pages`)."),
  requestId: z.string().describe("Also in the `x-request-id` header; quote it when asking for help."),
});
export type OcrResponse = z.infer<typeof ocrResponseSchema>;

/** `GET /api/credits`: the balance of the account behind the key (nothing is charged). */
export const creditsResponseSchema = z.object({
  success: z.literal(true),
  userId: z.string().describe("The account that owns the key (`usr_…`)."),
  balance: z.number().int().min(0).describe("Credits remaining: one is spent per page read."),
});
export type CreditsResponse = z.infer<typeof creditsResponseSchema>;

/** `GET /api/ocr/jobs` query. */
export const jobsListQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).optional().describe("Jobs per page, 1–100 (default 20)."),
  cursor: z
    .string()
    .regex(/^\d{1,20}$/, "cursor is the nextCursor of a previous page")
    .optional()
    .describe("`nextCursor` of the previous page, for older jobs (until it is `null`)."),
});

/** `GET /api/ocr/jobs/{id}/result` query. */
export const jobResultQuerySchema = z.strictObject({
  format: outputFormatSchema
    .optional()
    .describe(
      "The result's format (default: the job's `options.format`). The pages are stored as documents, so any format " +
        "can be asked for at any time. `pdf` answers the searchable PDF itself (`application/pdf`), not JSON.",
    ),
  pages: z
    .string()
    .max(256)
    .optional()
    .describe(
      'Pages of the job to return, e.g. `"51-100"` (default: all of the job\'s). A page the job did not read is `400`. ' +
        "A part that does not hold them all names the next in `next`.",
    ),
});

const jobStatusSchema = z
  .enum(["queued", "running", "succeeded", "failed", "cancelled"])
  .describe(
    "`queued` (accepted, no page read yet), `running` (pages are being read; `pagesDone` and `pagesFailed` grow), " +
      "then one of `succeeded` (at least one page delivered; check `pagesFailed`: a page that cannot be read fails " +
      "alone, with its code, and the rest go on), `failed` (no page could be read, the document itself could not be " +
      "opened, or the job did not end within 24 h of its submission; `error` says why), `cancelled` (with " +
      "`DELETE`; `error.code` is `cancelled`).",
  );

const failureSchema = z.object({ code: z.string(), message: z.string() });

/** One attempt to deliver a webhook event (a job's status, the settings page's log). */
export const webhookAttemptSchema = z.object({
  at: z.iso.datetime().describe("When the attempt started."),
  eventId: z.string().describe("The event's `webhook-id`: the same on every attempt, so a receiver can deduplicate."),
  type: z.string(),
  jobId: z.string().optional(),
  url: z.string(),
  attempt: z.number().int().min(1).describe("1 for the first."),
  status: z
    .number()
    .int()
    .nullable()
    .describe("The receiver's HTTP status; null when none came (refused, unreachable, timed out)."),
  latencyMs: z.number().int().min(0),
  ok: z.boolean().describe("A 2xx answer: delivered."),
  error: z.string().optional(),
  retrying: z.boolean().optional().describe("A failed attempt that will be retried."),
});
export type WebhookAttempt = z.infer<typeof webhookAttemptSchema>;

/** A job, as `POST /api/ocr/jobs` (202), `GET /api/ocr/jobs/{id}`, `DELETE` and the list answer it. */
export const jobViewSchema = z.object({
  success: z.literal(true),
  jobId: z.string().describe("`job_` and 22 letters, digits, `-` or `_`."),
  status: jobStatusSchema,
  pageCount: z.number().int().min(1).describe("Pages in the file (`pagesTotal`: those the job reads)."),
  pagesTotal: z
    .number()
    .int()
    .min(1)
    .describe("Pages the job reads (`options.pages`, default all): what was reserved."),
  pagesDone: z.number().int().min(0).describe("Pages read and delivered (each one credit)."),
  pagesFailed: z.number().int().min(0).describe("Pages that could not be read (refunded when the job ends)."),
  failedPages: z
    .array(z.object({ page: z.number().int(), code: z.string(), message: z.string() }))
    .optional()
    .describe("Each failed page's number, error code and message (the status of a single job only, not the list)."),
  creditsReserved: z.number().int().min(0).describe("Credits taken when the job was accepted: one per page."),
  creditsUsed: z.number().int().min(0).describe("Credits spent: the pages delivered."),
  creditsRefunded: z
    .number()
    .int()
    .min(0)
    .describe("Credits given back when the job ended (failed, cancelled and unread pages)."),
  format: outputFormatSchema.describe("The result's default format (`options.format`)."),
  inputSource: inputSourceSchema.describe("`base64`, `url` or `upload`, as on `/api/ocr/process`."),
  createdAt: z.iso.datetime().describe("When it was submitted (ISO 8601)."),
  startedAt: z.iso.datetime().nullable().describe("When its first page was taken up; `null` until then."),
  finishedAt: z.iso.datetime().nullable().describe("When it ended; `null` until then."),
  expiresAt: z.iso
    .datetime()
    .describe(
      "When its results are gone: `JOB_RESULT_TTL` (24 h) after it ends, then `410`; before it ends, the latest that " +
        "can be (24 h, the longest a job may run, plus `JOB_RESULT_TTL` after submission).",
    ),
  error: failureSchema.optional().describe("A failed or cancelled job: why."),
  links: z
    .object({ self: z.string(), result: z.string() })
    .describe("`self` (this status) and `result`, URLs relative to the service's origin."),
  webhook: z
    .object({
      url: z.string(),
      deliveries: z.array(webhookAttemptSchema).describe("The last attempts to deliver its event, newest first."),
    })
    .optional()
    .describe(
      "A job with a webhook (the status of a single job only): its `url` and `deliveries`, its last 20 delivery " +
        "attempts, newest first.",
    ),
});
export type JobViewBody = z.infer<typeof jobViewSchema>;

export const webhookEventTypes = ["job.succeeded", "job.failed", "job.cancelled", "webhook.test"] as const;

/** What a job event says about the job: never its text (fetch `resultUrl` with a key). */
export const webhookJobDataSchema = z.object({
  id: z.string().describe("The job id, `job_…`."),
  status: jobStatusSchema,
  pageCount: z.number().int().min(0),
  pagesTotal: z.number().int().min(0),
  pagesDone: z.number().int().min(0),
  pagesFailed: z.number().int().min(0),
  creditsReserved: z.number().int().min(0),
  creditsUsed: z.number().int().min(0),
  creditsRefunded: z.number().int().min(0),
  format: outputFormatSchema,
  createdAt: z.iso.datetime(),
  finishedAt: z.iso.datetime().nullable(),
  expiresAt: z.iso.datetime(),
  error: failureSchema.optional(),
  statusUrl: z.string().describe("The job's status (absolute when the submission's origin is known)."),
  resultUrl: z.string().describe("The job's result, read with an API key of the account."),
});

/** The body of a webhook delivery (Standard Webhooks' `{type, timestamp, data}`). */
export const webhookEventSchema = z.object({
  type: z.enum(webhookEventTypes),
  timestamp: z.iso
    .datetime()
    .describe("When the event happened (the `webhook-timestamp` header is the attempt's time)."),
  data: z.union([webhookJobDataSchema, z.object({ message: z.string() })]),
});
export type WebhookEvent = z.infer<typeof webhookEventSchema>;

/** `GET /api/ocr/jobs`. */
export const jobListSchema = z.object({
  success: z.literal(true),
  jobs: z.array(jobViewSchema),
  nextCursor: z.string().nullable().describe("Pass as `cursor` for older jobs; null when there are none."),
});

/** `GET /api/ocr/jobs/{id}/result`: one part of the result (the whole of it when it fits one response). */
export const jobResultSchema = z.object({
  success: z.literal(true),
  jobId: z.string().describe("The job's id."),
  status: jobStatusSchema,
  format: outputFormatSchema.describe("The format of `extractedText` (`pdf` is answered as `application/pdf`)."),
  pages: z.string().describe("The pages this part holds, as ranges (`1-50`); empty when none is ready."),
  extractedText: z
    .string()
    .describe("As `extractedText` of `/api/ocr/process`, for these pages; `json` pages carry `readBy`."),
  confidence: z.number().min(0).max(100).describe("0–100 over this part's pages."),
  pageCount: z.number().int().min(1),
  missingPages: z
    .array(z.object({ page: z.number().int(), status: z.enum(["pending", "failed"]), code: z.string().optional() }))
    .describe("Pages asked for that have no result: still to be read (`pending`), or `failed` with its code."),
  next: z
    .string()
    .nullable()
    .describe('The next part\'s URL when the pages asked for did not fit (also `Link: rel="next"`).'),
});
export type JobResultBody = z.infer<typeof jobResultSchema>;
