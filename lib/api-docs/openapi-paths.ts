import { jobResultQuerySchema, jobsListQuerySchema } from "@/lib/api/schemas";
import { JOB_ACCOUNT_BYTES_FACTOR, type Env } from "@/lib/env";
import { errorCodes } from "@/lib/api/error-catalogue";
import type { ErrorCode } from "@/lib/api/errors";
import {
  EXAMPLE_JOB_ID,
  errorResponses,
  exampleJob,
  idempotencyKeyParameter,
  jobIdParameter,
  preflightOperation,
  queryParameters,
  rateLimitHeaders,
  requestIdHeader,
  type Json,
} from "@/lib/api-docs/openapi-parts";
import { formatMegabytes } from "@/lib/input";
import { keySettings } from "@/lib/keys";
import { MAX_SYNC_PDF_BYTES } from "@/lib/ocr/model";
import { MIN_PREFER_WAIT_S, outputFormats } from "@/lib/vocabulary";

/** The `paths` of the OpenAPI document (lib/api-docs/openapi.ts): every REST operation, for this configuration. */
export function openApiPaths(env: Env): Json {
  // Not answers of this operation: 404 is MCP's and the jobs', 410 the jobs', 403 refuses forged page forms, 501 is a
  // method no path serves.
  const processErrors = errorCodes.filter(
    (code) => !["not_found", "gone", "forbidden", "not_implemented"].includes(code),
  );
  /** The errors of reading one job (status, cancel, result). */
  const jobErrors: ErrorCode[] = [
    "unauthorized",
    "not_found",
    "method_not_allowed",
    "gone",
    "rate_limited",
    "internal_error",
    "unavailable",
  ];
  const inline = formatMegabytes(env.MAX_INLINE_BYTES);
  const fileDescription =
    `The file itself, at most ${inline} (\`MAX_INLINE_BYTES\`; on Vercel 4 MB: its request bodies stop at 4.5 MB, so ` +
    "send larger files by `imageUrl`). PDF, JPEG, PNG, WebP or TIFF, decided from the bytes whatever the declared type " +
    "(`415` for anything else).";
  const rawFile = {
    schema: {
      type: "string",
      contentMediaType: "application/octet-stream",
      description: `${fileDescription} Options as query parameters.`,
    },
  };
  const requestBody = {
    required: true,
    description:
      "One of four forms: `multipart/form-data` with the file in `file` and the options as fields; the file's bytes as " +
      "the body with its type, the options as query parameters (`format`, `language`, `pages`, `webhook`); JSON with " +
      "`image` (base64) or `imageUrl` (`application/*+json`, or no `Content-Type`, is read as JSON too). Any other " +
      "type is `415` before the body is read. A body over its limit is `413` before it is read (declared `Content-Length`) or " +
      "as soon as it passes it (chunked), nothing charged.",
    content: {
      "multipart/form-data": {
        schema: {
          type: "object",
          required: ["file"],
          additionalProperties: false,
          properties: {
            file: { type: "string", contentMediaType: "application/octet-stream", description: fileDescription },
            format: { type: "string", enum: [...outputFormats], description: "As `options.format`." },
            language: { type: "string", maxLength: 100, description: "As `options.language`." },
            pages: { type: "string", maxLength: 256, description: "As `options.pages`." },
            webhook: { type: "string", format: "uri", description: "Jobs only: as `webhook.url`." },
          },
        },
        encoding: {
          file: {
            contentType: "application/pdf, image/jpeg, image/png, image/webp, image/tiff, application/octet-stream",
          },
        },
      },
      "application/pdf": rawFile,
      "image/jpeg": rawFile,
      "image/png": rawFile,
      "image/webp": rawFile,
      "image/tiff": rawFile,
      "application/octet-stream": rawFile,
      "application/json": {
        schema: { $ref: "#/components/schemas/OcrRequest" },
        examples: {
          base64: {
            summary: "base64 input",
            value: { image: "iVBORw0KGgoAAAANSUhEUgAA…", options: { format: "text" } },
          },
          url: {
            summary: "URL input",
            value: { imageUrl: "https://example.com/scan.pdf", options: { format: "markdown", pages: "1-3" } },
          },
        },
      },
    },
  };
  /** The options of a raw file body (lib/http/upload.ts); refused with any other form's. */
  const rawBodyParameters: Json[] = [
    {
      name: "format",
      in: "query",
      required: false,
      description: "With the file as the raw body only: as `options.format`.",
      schema: { type: "string", enum: [...outputFormats] },
    },
    {
      name: "language",
      in: "query",
      required: false,
      description: "With the file as the raw body only: as `options.language`.",
      schema: { type: "string", maxLength: 100 },
    },
    {
      name: "pages",
      in: "query",
      required: false,
      description: "With the file as the raw body only: as `options.pages`.",
      schema: { type: "string", maxLength: 256 },
    },
  ];
  const readHeaders = { ...requestIdHeader, ...rateLimitHeaders };
  /** `202 Accepted` with the job: `POST /api/ocr/jobs`, and `POST /api/ocr/process` with `Prefer: respond-async`. */
  const accepted = (extraHeaders: Json = {}): Json => ({
    description:
      "The job was accepted: its file was checked as a request's is, every selected page reserved (one credit each), " +
      "and it waits for a worker. Poll `Location` (`links.self`) until its status is `succeeded`, `failed` or " +
      "`cancelled`, then fetch `links.result`.",
    headers: {
      ...readHeaders,
      Location: { $ref: "#/components/headers/Location" },
      "x-credits-remaining": { $ref: "#/components/headers/CreditsRemaining" },
      "Idempotent-Replayed": { $ref: "#/components/headers/Replayed" },
      ...extraHeaders,
    },
    content: {
      "application/json": { schema: { $ref: "#/components/schemas/JobView" }, example: exampleJob("queued") },
    },
  });
  /** What reading about jobs (status, result, list) also answers. */
  const readNotes: Partial<Record<ErrorCode, string>> = {
    not_found: "a malformed job id, an unknown one, another account's, or one forgotten 7 days after it expired",
    rate_limited:
      `reads about jobs count against their own limit, ${keySettings({}, env).readsPerMinute} per key per minute ` +
      "(ten times `RATE_LIMIT_PER_MINUTE`), not against the request limit",
  };
  /** What submitting a job may also be refused for, beyond the synchronous route's reasons. */
  const submitNotes: Partial<Record<ErrorCode, string>> = {
    invalid_request:
      "a `webhook.url` that is not allowed (not https, a private address, does not resolve), or a `webhook` while the " +
      "account has no webhook signing secret",
    insufficient_credits: "the balance is below the job's pages: all of them are reserved at submit",
    payload_too_large: `a job of more than \`MAX_JOB_PAGES\` (${env.MAX_JOB_PAGES}) pages, or a URL file over \`MAX_JOB_URL_BYTES\` (${formatMegabytes(env.MAX_JOB_URL_BYTES)})`,
    rate_limited:
      `the account already has \`MAX_QUEUED_PAGES_PER_ACCOUNT\` (${env.MAX_QUEUED_PAGES_PER_ACCOUNT}) pages waiting in its unfinished jobs (\`Retry-After: 60\`); ` +
      "or its jobs' stored files (queued, running, and succeeded ones kept with their results) and this one would pass " +
      `${formatMegabytes(JOB_ACCOUNT_BYTES_FACTOR * env.MAX_JOB_URL_BYTES)} (twice \`MAX_JOB_URL_BYTES\`; \`Retry-After\` until the first of them goes, the message says when)`,
    unavailable:
      "a deployment without a TCP connection to its Redis (`REDIS_URL`), which the job queue needs: jobs are not available there, the message says so",
  };

  return {
    "/api/ocr/process": {
      post: {
        operationId: "processDocument",
        summary: "Extract text from a document",
        description:
          "Send exactly one of `image` (base64 or data URL) and `imageUrl`. The file type is read from its bytes. " +
          "Credits: one per page read, reserved before OCR (402 when short) and refunded on any failure. " +
          "With an `Idempotency-Key`, a retry within 24 h gets the stored response without being charged again. " +
          `A PDF may have at most \`MAX_PDF_PAGES\` (${env.MAX_PDF_PAGES}) pages of work: pages that need OCR, a ` +
          "page read from its text layer counting a tenth of one; past it `413`, whose message points to the jobs. " +
          "With `Prefer: respond-async` the request becomes an asynchronous job instead: `202` as `POST /api/ocr/jobs` answers; " +
          "with `Prefer: respond-async, wait=N` the text when its reading is expected to end within N seconds, else that `202`.",
        parameters: [
          idempotencyKeyParameter(
            "1–255 visible ASCII characters, unique per logical request (e.g. a UUID). The same key with the same " +
              "body replays the stored response (marked `Idempotent-Replayed: true`); while the first is running, " +
              "409; with another body, 422. 5xx, 402 and 429 answers are not stored, so a retry runs again.",
          ),
          {
            name: "Prefer",
            in: "header",
            required: false,
            description:
              "`respond-async` (RFC 7240): answer `202` with an asynchronous job (as `POST /api/ocr/jobs`) instead of " +
              "the text; the answer carries `Preference-Applied: respond-async`. `respond-async, wait=N`: the text " +
              "(`200`) when the document's reading is expected to end within N seconds (as the MCP tool decides), " +
              "else that `202`; a webhook is then refused (`400`). `wait=N` alone: the read's deadline is N seconds " +
              `(at least ${MIN_PREFER_WAIT_S}, at most \`REQUEST_DEADLINE_MS\`), past it \`504\`. Other preferences are ignored.`,
            schema: { type: "string" },
            example: "respond-async, wait=25",
          },
          ...rawBodyParameters,
        ],
        requestBody,
        responses: {
          "200": {
            description: "The extracted text.",
            headers: {
              ...requestIdHeader,
              ...rateLimitHeaders,
              "x-credits-remaining": { $ref: "#/components/headers/CreditsRemaining" },
              "Idempotent-Replayed": { $ref: "#/components/headers/Replayed" },
            },
            content: {
              "application/json": {
                schema: { $ref: "#/components/schemas/OcrResponse" },
                example: {
                  success: true,
                  userId: "usr_Qm9yZ2VzIEx1aXMg",
                  inputSource: "base64",
                  extractedText: "Invoice 2024-001\nTotal 42.50 EUR",
                  confidence: 91.4,
                  processingTime: 812,
                  creditsUsed: 1,
                  pageCount: 1,
                  requestId: "req_3q2Vw0mVnUuD8bFq6xkKjg",
                },
              },
            },
          },
          "202": accepted({ "Preference-Applied": { $ref: "#/components/headers/PreferenceApplied" } }),
          ...errorResponses(processErrors, {
            payload_too_large:
              `\`format: "pdf"\` when the file, or the PDF made of it, is over ${MAX_SYNC_PDF_BYTES / 1e6} MB (4 MB as base64, under ` +
              "the 4.5 MB response limit; the message names the job route, which streams it); " +
              `with \`Prefer: respond-async\`, the limits of a job (${submitNotes.payload_too_large})`,
            rate_limited: `with \`Prefer: respond-async\`, ${submitNotes.rate_limited}`,
            unavailable: `with \`Prefer: respond-async\`, ${submitNotes.unavailable}`,
          }),
        },
      },
      options: preflightOperation("processDocumentPreflight"),
    },
    "/api/ocr/jobs": {
      post: {
        operationId: "submitJob",
        summary: "Read a document asynchronously (submit a job)",
        description:
          "The body of `POST /api/ocr/process`, checked the same way (the same 4xx), but nothing is read yet: the " +
          "answer is `202` with the job and its `Location`. Every selected page is reserved now (`402` when the " +
          "balance is short, before any work); each page's credit is spent when its text is stored, and the pages " +
          "that fail, are cancelled or are never read come back in one refund when the job ends. The ledger names " +
          `the job's id on both entries. A job reads up to \`MAX_JOB_PAGES\` (${env.MAX_JOB_PAGES}) pages; an ` +
          `\`imageUrl\` may be up to ${formatMegabytes(env.MAX_JOB_URL_BYTES)}, \`image\` as much as on the synchronous route.`,
        parameters: [
          idempotencyKeyParameter(
            "As on `POST /api/ocr/process`: the same key with the same body within 24 h answers the same job " +
              "(`Idempotent-Replayed: true`), so a retried submission never makes a second job.",
          ),
          ...rawBodyParameters,
          {
            name: "webhook",
            in: "query",
            required: false,
            description: "With the file as the raw body only: as `webhook.url`.",
            schema: { type: "string", format: "uri" },
          },
        ],
        requestBody,
        responses: {
          "202": accepted(),
          ...errorResponses(processErrors, submitNotes),
        },
      },
      get: {
        operationId: "listJobs",
        summary: "The account's jobs, newest first",
        description:
          "Jobs of the account behind the key (every key of the account), newest first, as long as they are " +
          "kept. Counts against the read limit (ten times `RATE_LIMIT_PER_MINUTE`), not the request limit.",
        parameters: queryParameters(jobsListQuerySchema),
        responses: {
          "200": {
            description: "A page of jobs; `nextCursor` continues with older ones.",
            headers: readHeaders,
            content: {
              "application/json": {
                schema: { $ref: "#/components/schemas/JobList" },
                example: { success: true, jobs: [exampleJob("succeeded", false)], nextCursor: null },
              },
            },
          },
          ...errorResponses(
            ["invalid_request", "unauthorized", "method_not_allowed", "rate_limited", "internal_error", "unavailable"],
            { invalid_request: "a bad `limit` or `cursor`", rate_limited: readNotes.rate_limited },
          ),
        },
      },
      options: preflightOperation("jobsPreflight"),
    },
    "/api/ocr/jobs/{id}": {
      parameters: [jobIdParameter],
      get: {
        operationId: "getJob",
        summary: "A job's status and progress",
        description:
          "`queued`, `running`, then `succeeded` (at least one page delivered: check `pagesFailed` and " +
          "`failedPages`), `failed` or `cancelled`. While it is queued or running, `Retry-After` says when to ask " +
          "again. Its results are kept `JOB_RESULT_TTL` after it ends (`expiresAt`), then `410` for 7 days, then `404`. " +
          "Counts against the read limit (ten times `RATE_LIMIT_PER_MINUTE`).",
        responses: {
          "200": {
            description: "The job.",
            headers: { ...readHeaders, "Retry-After": { $ref: "#/components/headers/JobRetryAfter" } },
            content: {
              "application/json": {
                schema: { $ref: "#/components/schemas/JobView" },
                examples: {
                  running: { value: exampleJob("running") },
                  succeeded: { summary: "ended, one page failed", value: exampleJob("succeeded") },
                },
              },
            },
          },
          ...errorResponses(jobErrors, readNotes),
        },
      },
      delete: {
        operationId: "cancelJob",
        summary: "Cancel a job",
        description:
          "Stops the job: pages not read yet are not read, and their credits come back at once (one `refund` " +
          "ledger entry naming the job). The pages already read stay readable. Answers the job, now `cancelled`; " +
          "a job that had already ended is answered as it is. Counts against the request limit.",
        responses: {
          "200": {
            description: "The job after the cancellation.",
            headers: readHeaders,
            content: { "application/json": { schema: { $ref: "#/components/schemas/JobView" } } },
          },
          ...errorResponses(jobErrors, {
            not_found: readNotes.not_found,
            rate_limited: "cancelling counts against the request limit (`RATE_LIMIT_PER_MINUTE`)",
          }),
        },
      },
      options: preflightOperation("jobPreflight"),
    },
    "/api/ocr/jobs/{id}/result": {
      parameters: [jobIdParameter],
      get: {
        operationId: "getJobResult",
        summary: "A job's text, in parts (or its searchable PDF)",
        description:
          "With `format=pdf` (or a job submitted with it, and no `format`): the searchable PDF of the pages asked for " +
          "that have been read, streamed whole as `application/pdf` (no parts; `x-pages` lists the pages in it, " +
          "`x-missing-pages` those not read yet or failed; `409` while no page is read). Otherwise: " +
          "rendered from the stored pages in `format` (default: the job's `options.format`), as many of the pages " +
          "asked for (default: all of the job's) as fit one response of about 4 MB, from the first. When some did " +
          'not fit, `next` (and `Link: <…>; rel="next"`) is the URL of the part with the rest: follow it until it ' +
          "is null. Works while the job runs too: pages not read yet are listed in `missingPages` as `pending`, " +
          "failed ones as `failed` with their code. Counts against the read limit (ten times `RATE_LIMIT_PER_MINUTE`).",
        parameters: queryParameters(jobResultQuerySchema),
        responses: {
          "200": {
            description: "One part of the result (the whole of it when it fits).",
            headers: { ...readHeaders, Link: { $ref: "#/components/headers/Link" } },
            content: {
              "application/pdf": {
                schema: { type: "string", format: "binary", description: "`format=pdf`: the searchable PDF, whole." },
              },
              "application/json": {
                schema: { $ref: "#/components/schemas/JobResult" },
                example: {
                  success: true,
                  jobId: EXAMPLE_JOB_ID,
                  status: "succeeded",
                  format: "text",
                  pages: "1-36,38-90",
                  extractedText: "Page one …\f…",
                  confidence: 93.2,
                  pageCount: 120,
                  missingPages: [{ page: 37, status: "failed", code: "payload_too_large" }],
                  next: `/api/ocr/jobs/${EXAMPLE_JOB_ID}/result?format=text&pages=91-120`,
                },
              },
            },
          },
          ...errorResponses(["invalid_request", "conflict", "unreadable_document", ...jobErrors], {
            ...readNotes,
            invalid_request: "a `pages` list that is malformed or names a page the job did not read",
            conflict: "`format=pdf` while no page of the job is read yet",
            unreadable_document: "`format=pdf` of a PDF that pdf-lib cannot rebuild (encrypted, or broken past repair)",
            gone: "`format=pdf` when the job's file is no longer kept",
          }),
        },
      },
      options: preflightOperation("jobResultPreflight"),
    },
    "/api/credits": {
      get: {
        operationId: "getCredits",
        summary: "Credit balance",
        description:
          "The credits left on the account behind the key, also in `x-credits-remaining`. Free: nothing is charged.",
        responses: {
          "200": {
            description: "The balance.",
            headers: {
              ...requestIdHeader,
              ...rateLimitHeaders,
              "x-credits-remaining": { $ref: "#/components/headers/CreditsRemaining" },
            },
            content: {
              "application/json": {
                schema: { $ref: "#/components/schemas/CreditsResponse" },
                example: { success: true, userId: "usr_Qm9yZ2VzIEx1aXMg", balance: 97 },
              },
            },
          },
          ...errorResponses(["unauthorized", "method_not_allowed", "rate_limited", "unavailable", "internal_error"]),
        },
      },
    },
    "/api/openapi.json": {
      get: {
        operationId: "getOpenApiDocument",
        summary: "This document",
        security: [],
        responses: {
          "200": {
            description: "OpenAPI 3.1 document.",
            headers: requestIdHeader,
            content: { "application/json": {} },
          },
          ...errorResponses(["method_not_allowed", "internal_error"]),
        },
      },
    },
  };
}
