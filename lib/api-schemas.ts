import { z } from "zod";
import { inputSources, outputFormats } from "@/lib/vocabulary";

/*
 * The REST request and response, as zod schemas. The route parses with them, `lib/openapi.ts` describes the API
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
      "`JSON.parse(extractedText)` gives it.",
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
        "Tesseract language codes joined by `+`, e.g. `eng` or `eng+deu`, from the installed ones. Default `auto`: " +
          "English, re-read in another installed language when the text is clearly in it.",
      ),
    pages: z
      .string()
      .max(256)
      .optional()
      .describe('PDF pages to read, 1-based: `"1-3,5"`, `"7-"` (to the end). Default: every page. Only those are charged.'),
  },
  { error: unknownKeys(OPTION_KEYS) },
);
export type OcrOptions = z.infer<typeof ocrOptionsSchema>;

const REQUEST_KEYS = ["image", "imageUrl", "options"] as const;

/** `POST /api/ocr/process` body: exactly one of `image` / `imageUrl`; unknown keys are rejected so typos surface. */
export const ocrRequestSchema = z
  .strictObject(
    {
      image: z
        .string()
        .optional()
        .describe(
          "The file as base64 (standard or URL-safe alphabet, whitespace ignored) or as a data URL " +
            "(`data:application/pdf;base64,…`). PDF, JPEG, PNG or WebP, decided from the bytes. At most 3 MB decoded.",
        ),
      imageUrl: z
        .string()
        .max(MAX_IMAGE_URL_LENGTH)
        .optional()
        .meta({
          format: "uri",
          description:
            "An http(s) URL of the file; fetched by the service (public addresses only, at most 3 redirects, 15 s, 25 MB).",
        }),
      options: ocrOptionsSchema.optional(),
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

const inputSourceSchema = z.enum(inputSources);
export type InputSource = z.infer<typeof inputSourceSchema>;

/** The 200 answer. The seed's fields keep their names and types; `pageCount` and `requestId` are additions. */
export const ocrResponseSchema = z.object({
  success: z.literal(true),
  userId: z.string().describe("The account that owns the key (`usr_…`)."),
  inputSource: inputSourceSchema.describe("`base64` for `image`, `url` for `imageUrl`."),
  extractedText: z
    .string()
    .describe("The text in the requested format. For `json`, `JSON.parse(extractedText)` gives an OcrDocument."),
  confidence: z
    .number()
    .min(0)
    .max(100)
    .describe("0–100: the character-weighted mean of word confidences; a PDF page read from its text layer counts as 100."),
  processingTime: z.number().int().min(0).describe("Milliseconds from request received to response ready."),
  creditsUsed: z.number().int().min(0).describe("One credit per page read: 1 for an image, the pages processed for a PDF."),
  pageCount: z.number().int().min(1).describe("Pages in the file (a PDF may have more than were read, see `options.pages`)."),
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
