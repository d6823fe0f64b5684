import { z } from "zod";
import {
  creditsResponseSchema,
  jobListSchema,
  jobResultQuerySchema,
  jobResultSchema,
  jobsListQuerySchema,
  jobViewSchema,
  ocrOptionsSchema,
  ocrRequestSchema,
  ocrResponseSchema,
  webhookEventSchema,
} from "@/lib/api/schemas";
import { getEnv } from "@/lib/env";
import { errorCatalogue, errorCodes } from "@/lib/api/error-catalogue";
import { errorBodySchema, errorStatus, type ErrorCode } from "@/lib/api/errors";
import { CORS_ALLOW_HEADERS } from "@/lib/http";
import { formatMegabytes } from "@/lib/input";
import { MAX_SYNC_PDF_BYTES, ocrDocumentSchema } from "@/lib/ocr/model";
import { SERVICE_VERSION } from "@/lib/version";
import { outputFormats } from "@/lib/vocabulary";

type Json = { [key: string]: unknown };

const header = (description: string, schema: Json = { type: "string" }) => ({ description, schema });

const headers = {
  requestId: header("This request's id (`req_…`), on every response; quote it when asking for help."),
  rateLimitLimit: header("Requests allowed per window for this key.", { type: "integer" }),
  rateLimitRemaining: header("Requests left in the current window.", { type: "integer" }),
  rateLimitReset: header("Seconds until the window resets.", { type: "integer" }),
  creditsRemaining: header("The account's credit balance after this request.", { type: "integer" }),
  retryAfter: header("Seconds to wait before retrying.", { type: "integer" }),
  wwwAuthenticate: header('`Bearer realm="ocr"`.'),
  allow: header("Methods this path serves."),
  replayed: header("`true` when the response is a replay for an Idempotency-Key (not charged again)."),
  location: header("The job's status URL, relative: `/api/ocr/jobs/{id}`."),
  preferenceApplied: header("`respond-async`: the request became an asynchronous job (RFC 7240)."),
  jobRetryAfter: header(
    "Seconds to wait before asking again, while the job is `queued` or `running` (1–30: about one second per 20 pages " +
      "left); absent once it has ended.",
    { type: "integer" },
  ),
  link: header('`<URL of the next part>; rel="next"` when this part does not hold every page asked for (as `next`).'),
};

const rateLimitHeaders = {
  "RateLimit-Limit": { $ref: "#/components/headers/RateLimitLimit" },
  "RateLimit-Remaining": { $ref: "#/components/headers/RateLimitRemaining" },
  "RateLimit-Reset": { $ref: "#/components/headers/RateLimitReset" },
};
const requestIdHeader = { "x-request-id": { $ref: "#/components/headers/RequestId" } };

/** Extra headers per error code on `POST /api/ocr/process`. */
function errorHeaders(codes: ErrorCode[]): Json {
  const result: Json = { ...requestIdHeader };
  // Errors after authentication carry the rate-limit headers.
  if (codes.some((code) => !["unauthorized", "method_not_allowed", "internal_error"].includes(code))) {
    Object.assign(result, rateLimitHeaders);
  }
  if (codes.includes("unauthorized")) result["WWW-Authenticate"] = { $ref: "#/components/headers/WWWAuthenticate" };
  if (codes.includes("method_not_allowed")) result.Allow = { $ref: "#/components/headers/Allow" };
  if (codes.some((code) => errorStatus[code] === 429 || errorStatus[code] === 503)) {
    result["Retry-After"] = { $ref: "#/components/headers/RetryAfter" };
  }
  if (codes.includes("insufficient_credits"))
    result["x-credits-remaining"] = { $ref: "#/components/headers/CreditsRemaining" };
  return result;
}

/**
 * One response object per status, listing the codes that use it and when; `notes` adds what a code also means on
 * this operation (the catalogue's `when` is the service-wide text).
 */
function errorResponses(codes: ErrorCode[], notes: Partial<Record<ErrorCode, string>> = {}): Json {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(errorStatus[code], [...(byStatus.get(errorStatus[code]) ?? []), code]);
  const responses: Json = {};
  for (const [status, statusCodes] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: statusCodes
        .map(
          (code) =>
            `\`${code}\`: ${errorCatalogue[code].when}${notes[code] ? `; on this operation also ${notes[code]}` : ""}`,
        )
        .join(". "),
      headers: errorHeaders(statusCodes),
      content: {
        "application/json": {
          schema: {
            allOf: [
              { $ref: "#/components/schemas/ErrorBody" },
              { properties: { error: { properties: { code: { enum: statusCodes } } } } },
            ],
          },
          examples: Object.fromEntries(
            statusCodes.map((code) => [
              code,
              { value: { success: false, error: { code, message: "…" }, requestId: "req_3q2Vw0mVnUuD8bFq6xkKjg" } },
            ]),
          ),
        },
      },
    };
  }
  return responses;
}

/** Component schemas from the zod schemas: requests as the input side, responses as the output side. */
function componentSchemas(): Record<string, Json> {
  const requests = z.registry<{ id: string }>();
  requests.add(ocrRequestSchema, { id: "OcrRequest" });
  requests.add(ocrOptionsSchema, { id: "OcrOptions" });
  const responses = z.registry<{ id: string }>();
  responses.add(ocrResponseSchema, { id: "OcrResponse" });
  responses.add(creditsResponseSchema, { id: "CreditsResponse" });
  responses.add(errorBodySchema, { id: "ErrorBody" });
  responses.add(ocrDocumentSchema, { id: "OcrDocument" });
  responses.add(jobViewSchema, { id: "JobView" });
  responses.add(jobListSchema, { id: "JobList" });
  responses.add(jobResultSchema, { id: "JobResult" });
  responses.add(webhookEventSchema, { id: "WebhookEvent" });

  const uri = (id: string) => `#/components/schemas/${id}`;
  const convert = (registry: typeof requests, io: "input" | "output") =>
    z.toJSONSchema(registry, { target: "draft-2020-12", io, uri }).schemas as Record<string, Json>;
  const schemas = { ...convert(requests, "input"), ...convert(responses, "output") };
  // Inside an OpenAPI document the dialect is the document's and components are addressed by their key.
  for (const schema of Object.values(schemas)) {
    delete schema.$schema;
    delete schema.$id;
  }
  const document = schemas.OcrDocument;
  if (document) {
    document.description =
      "The `json` format: `JSON.parse(extractedText)`. Pages → blocks → lines → words, each with text, confidence " +
      "(0–100) and `bbox` `[x0, y0, x1, y1]` normalized to 0–1 of the page, the same for scans and text-layer pages.";
  }
  const response = schemas.OcrResponse;
  const properties = response?.properties as Record<string, Json> | undefined;
  if (properties?.extractedText) {
    // JSON Schema 2020-12 annotations: what the string holds when the format is `json`.
    properties.extractedText.contentMediaType = "application/json";
    properties.extractedText.contentSchema = { $ref: uri("OcrDocument") };
    properties.extractedText.description = `${String(properties.extractedText.description ?? "")} (contentSchema applies to the \`json\` format only.)`;
  }
  return schemas;
}

/** A zod query schema (strict object of optional fields) as OpenAPI query parameters. */
function queryParameters(schema: z.ZodType): Json[] {
  const json = z.toJSONSchema(schema, { target: "draft-2020-12", io: "input" }) as {
    properties?: Record<string, Json>;
    required?: string[];
  };
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property;
    return { name, in: "query", required: json.required?.includes(name) ?? false, description, schema: rest };
  });
}

const idempotencyKeyParameter = (description: string): Json => ({
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description,
  schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e]+$" },
});

/**
 * `JOB_ID_PATTERN` of lib/jobs/service.ts, which the routes check (tests/api/openapi.test.ts compares them): importing
 * lib/jobs here would pull the job runner and the engine pool into this route.
 */
const JOB_ID_PATTERN = "^job_[A-Za-z0-9_-]{22}$";

const jobIdParameter: Json = {
  name: "id",
  in: "path",
  required: true,
  description:
    "The job's id (`jobId`), as `Location` and `links` give it. A malformed, unknown or another account's id is `404`.",
  schema: { type: "string", pattern: JOB_ID_PATTERN },
};

function preflightOperation(operationId: string): Json {
  return {
    operationId,
    summary: "CORS preflight",
    security: [],
    responses: {
      "204": {
        description: `CORS preflight answer; allowed request headers: ${CORS_ALLOW_HEADERS.join(", ")}.`,
        headers: { ...requestIdHeader, Allow: { $ref: "#/components/headers/Allow" } },
      },
    },
  };
}

const EXAMPLE_JOB_ID = "job_Vq3rD0kOaB2sYt7uXw9zQA";

/** An example job; `single`: as the status of one job answers it (with `failedPages`), not as the list does. */
function exampleJob(status: "queued" | "running" | "succeeded", single = true): Json {
  const ended = status === "succeeded";
  return {
    success: true,
    jobId: EXAMPLE_JOB_ID,
    status,
    pageCount: 120,
    pagesTotal: 120,
    pagesDone: status === "queued" ? 0 : ended ? 119 : 48,
    pagesFailed: ended ? 1 : 0,
    creditsReserved: 120,
    creditsUsed: status === "queued" ? 0 : ended ? 119 : 48,
    creditsRefunded: ended ? 1 : 0,
    format: "text",
    inputSource: "url",
    createdAt: "2026-11-24T09:00:00.000Z",
    startedAt: status === "queued" ? null : "2026-11-24T09:00:01.250Z",
    finishedAt: ended ? "2026-11-24T09:03:12.480Z" : null,
    expiresAt: ended ? "2026-11-25T09:03:12.480Z" : "2026-11-26T09:00:00.000Z",
    ...(single &&
      status !== "queued" && { failedPages: ended ? [{ page: 37, code: "payload_too_large", message: "…" }] : [] }),
    links: { self: `/api/ocr/jobs/${EXAMPLE_JOB_ID}`, result: `/api/ocr/jobs/${EXAMPLE_JOB_ID}/result` },
  };
}

function buildOpenApiDocument(): Json {
  const env = getEnv();
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
  const limits = [
    `a file in the request (multipart, raw body, or base64 decoded) ${formatMegabytes(env.MAX_INLINE_BYTES)} ` +
      "(20 MB self-hosted, 4 MB on Vercel, whose request bodies stop at 4.5 MB: larger files by `imageUrl`)",
    `URL file ${formatMegabytes(env.MAX_URL_BYTES)} (jobs: ${formatMegabytes(env.MAX_JOB_URL_BYTES)})`,
    `URL fetch ${env.URL_FETCH_TIMEOUT_MS / 1000} s and ${env.URL_MAX_REDIRECTS} redirects, public http(s) addresses only`,
    `PDF pages ${env.MAX_PDF_PAGES} needing OCR per request (a page read from its text layer counts a tenth), ` +
      `${env.MAX_JOB_PAGES} per job`,
    `image pixels ${Math.round(env.MAX_IMAGE_PIXELS / 1e6)} megapixels`,
    `request deadline ${env.REQUEST_DEADLINE_MS / 1000} s`,
    `rate limit ${env.RATE_LIMIT_PER_MINUTE} requests per minute per key, and ${env.READ_RATE_LIMIT_PER_MINUTE} reads ` +
      "about jobs (status, result, list)",
    `job results kept ${Math.round(env.JOB_RESULT_TTL / 3600)} h after the job ends`,
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
      "`image` (base64) or `imageUrl`. A body over its limit is `413` before it is read (declared `Content-Length`) or " +
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
  /** What submitting a job may also be refused for, beyond the synchronous route's reasons. */
  const submitNotes: Partial<Record<ErrorCode, string>> = {
    payload_too_large: `a job of more than \`MAX_JOB_PAGES\` (${env.MAX_JOB_PAGES}) pages, or a URL file over \`MAX_JOB_URL_BYTES\` (${formatMegabytes(env.MAX_JOB_URL_BYTES)})`,
    rate_limited: `the account already has \`MAX_QUEUED_PAGES_PER_ACCOUNT\` (${env.MAX_QUEUED_PAGES_PER_ACCOUNT}) pages waiting in its unfinished jobs (\`Retry-After\`)`,
    unavailable:
      "a deployment without a TCP connection to its Redis (`REDIS_URL`), which the job queue needs: jobs are not available there, the message says so",
  };

  return {
    openapi: "3.1.0",
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    info: {
      title: "OCR API",
      version: SERVICE_VERSION,
      description:
        "Extract text from PDF, JPEG, PNG, WebP and TIFF files, sent as base64 or fetched from a URL: synchronously " +
        "(`POST /api/ocr/process`), or as an asynchronous job for long documents (`POST /api/ocr/jobs`, or the same " +
        "route with `Prefer: respond-async`; then poll the job and fetch its result). " +
        "One credit per page read; nothing is charged for a failed request. Every failure has the body " +
        '`{"success": false, "error": {"code", "message"}, "requestId"}`. CORS is open to any origin (keys, not ' +
        `cookies, authenticate). Limits: ${limits.join("; ")}.`,
    },
    servers: [{ url: "/" }],
    security: [{ ApiKeyHeader: [] }, { BearerAuth: [] }],
    paths: {
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
            "With `Prefer: respond-async` the request becomes an asynchronous job instead: `202` as `POST /api/ocr/jobs` answers.",
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
                "the text; the answer carries `Preference-Applied: respond-async`. Other preferences are ignored.",
              schema: { type: "string" },
              example: "respond-async",
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
            "kept. Counts against the read limit (`READ_RATE_LIMIT_PER_MINUTE`), not the request limit.",
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
            ...errorResponses([
              "invalid_request",
              "unauthorized",
              "method_not_allowed",
              "rate_limited",
              "internal_error",
              "unavailable",
            ]),
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
            "Counts against the read limit (`READ_RATE_LIMIT_PER_MINUTE`).",
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
            ...errorResponses(jobErrors),
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
            ...errorResponses(jobErrors),
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
            "failed ones as `failed` with their code. Counts against the read limit (`READ_RATE_LIMIT_PER_MINUTE`).",
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
              invalid_request: "a `pages` list that is malformed or names a page the job did not read",
              conflict: "`format=pdf` while no page of the job is read yet",
              unreadable_document:
                "`format=pdf` of a PDF that pdf-lib cannot rebuild (encrypted, or broken past repair)",
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
    },
    webhooks: {
      jobEnded: {
        post: {
          summary: "A job ended (sent to its webhook URL)",
          description:
            "Sent when a job with a `webhook` (or the account's default webhook URL) ends: `job.succeeded`, `job.failed` " +
            "or `job.cancelled` (and `webhook.test` from the settings page). Signed per Standard Webhooks with the " +
            "account's `whsec_` secret: verify the raw body with the `standardwebhooks` package. A `2xx` answer within " +
            `${env.WEBHOOK_TIMEOUT_MS / 1000} s is a delivery; anything else is retried with exponential back-off ` +
            "(about a day), each attempt with the same `webhook-id`; `410` stops the retries. A job cancelled before " +
            "any page was read sends no event. A receiver (the URL's origin) that fails 5 times in a row is paused as a " +
            "whole (its events wait, one probe after each pause); one failing for 5 days is disabled until the settings " +
            "page re-enables it.",
          security: [],
          parameters: [
            {
              name: "webhook-id",
              in: "header",
              required: true,
              description: "The event's id, the same on every attempt: deduplicate on it.",
              schema: { type: "string" },
            },
            {
              name: "webhook-timestamp",
              in: "header",
              required: true,
              description: "This attempt's time, Unix seconds.",
              schema: { type: "string" },
            },
            {
              name: "webhook-signature",
              in: "header",
              required: true,
              description:
                "`v1,<base64 HMAC-SHA256>` of `{id}.{timestamp}.{body}`; two, space-separated, for 24 h after a rotation.",
              schema: { type: "string" },
            },
          ],
          requestBody: {
            required: true,
            content: { "application/json": { schema: { $ref: "#/components/schemas/WebhookEvent" } } },
          },
          responses: { "2XX": { description: "Delivered." } },
        },
      },
    },
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        ApiKeyHeader: {
          type: "apiKey",
          in: "header",
          name: "x-api-key",
          description: "An API key from the settings page.",
        },
        BearerAuth: { type: "http", scheme: "bearer", description: "The same key as `Authorization: Bearer <key>`." },
      },
      headers: {
        RequestId: headers.requestId,
        RateLimitLimit: headers.rateLimitLimit,
        RateLimitRemaining: headers.rateLimitRemaining,
        RateLimitReset: headers.rateLimitReset,
        CreditsRemaining: headers.creditsRemaining,
        RetryAfter: headers.retryAfter,
        WWWAuthenticate: headers.wwwAuthenticate,
        Allow: headers.allow,
        Replayed: headers.replayed,
        Location: headers.location,
        PreferenceApplied: headers.preferenceApplied,
        JobRetryAfter: headers.jobRetryAfter,
        Link: headers.link,
      },
    },
  };
}

let cached: Json | undefined;

/**
 * The OpenAPI 3.1 document, built on first use and kept: its description states the limits of this process's
 * configuration, which does not change while it runs.
 */
export function getOpenApiDocument(): Json {
  cached ??= buildOpenApiDocument();
  return cached;
}
