import type { Env } from "@/lib/env";
import { componentSchemas, headers, type Json } from "@/lib/api-docs/openapi-parts";
import { openApiPaths } from "@/lib/api-docs/openapi-paths";
import { fetchSettings, formatMegabytes } from "@/lib/input";
import { keySettings } from "@/lib/keys";
import { ocrSettings } from "@/lib/ocr/model";
import { webhookSettings } from "@/lib/webhooks/settings";
import { SERVICE_VERSION } from "@/lib/version";

/*
 * The OpenAPI 3.1 document, served at /api/openapi.json and rendered into docs/api.md's reference sections
 * (scripts/api-docs.ts). Assembled from lib/api-docs/openapi-parts.ts (headers, error responses, the zod schemas as
 * components, parameters, examples) and lib/api-docs/openapi-paths.ts (the operations).
 */

/** The document for a configuration: its limits are stated in it (docs/api.md's reference uses the defaults). */
export function buildOpenApiDocument(env: Env): Json {
  const urlFetch = fetchSettings();
  const limits = [
    `a file in the request (multipart, raw body, or base64 decoded) ${formatMegabytes(env.MAX_INLINE_BYTES)} ` +
      "(20 MB self-hosted, 4 MB on Vercel, whose request bodies stop at 4.5 MB: larger files by `imageUrl`)",
    `URL file ${formatMegabytes(env.MAX_URL_BYTES)} (jobs: ${formatMegabytes(env.MAX_JOB_URL_BYTES)})`,
    `URL fetch ${urlFetch.timeoutMs / 1000} s and ${urlFetch.maxRedirects} redirects, public http(s) addresses only`,
    `PDF pages ${env.MAX_PDF_PAGES} needing OCR per request (a page read from its text layer counts a tenth), ` +
      `${env.MAX_JOB_PAGES} per job`,
    `image pixels ${Math.round(ocrSettings().maxImagePixels / 1e6)} megapixels`,
    `request deadline ${env.REQUEST_DEADLINE_MS / 1000} s`,
    `rate limit ${env.RATE_LIMIT_PER_MINUTE} requests per minute per key, and ${keySettings({}, env).readsPerMinute} reads ` +
      "about jobs (status, result, list)",
    `job results kept ${Math.round(env.JOB_RESULT_TTL / 3600)} h after the job ends`,
  ];

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
    paths: openApiPaths(env),
    webhooks: {
      jobEnded: {
        post: {
          summary: "A job ended (sent to its webhook URL)",
          description:
            "Sent when a job with a `webhook` (or the account's default webhook URL) ends: `job.succeeded`, `job.failed` " +
            "or `job.cancelled` (and `webhook.test` from the settings page). Signed per Standard Webhooks with the " +
            "account's `whsec_` secret: verify the raw body with the `standardwebhooks` package. A `2xx` answer within " +
            `${webhookSettings().timeoutMs / 1000} s is a delivery; anything else is retried with exponential back-off ` +
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
 * The OpenAPI 3.1 document, built on first use (of the caller's `env`, this process's configuration) and kept: its
 * description states the limits of that configuration, which does not change while the process runs.
 */
export function getOpenApiDocument(env: Env): Json {
  cached ??= buildOpenApiDocument(env);
  return cached;
}
