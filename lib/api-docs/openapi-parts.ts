import { z } from "zod";
import {
  creditsResponseSchema,
  jobListSchema,
  jobResultSchema,
  jobViewSchema,
  ocrOptionsSchema,
  ocrRequestSchema,
  ocrResponseSchema,
  webhookEventSchema,
} from "@/lib/api/schemas";
import { errorCatalogue } from "@/lib/api/error-catalogue";
import { errorBodySchema, errorStatus, type ErrorCode } from "@/lib/api/errors";
import { CORS_ALLOW_HEADERS } from "@/lib/http/cors";
import { ocrDocumentSchema } from "@/lib/ocr/model";

/*
 * The parts the OpenAPI document (lib/api-docs/openapi.ts) is assembled from: its headers, error responses, component
 * schemas (from the zod schemas), parameters and examples. The paths are lib/api-docs/openapi-paths.ts.
 */

export type Json = { [key: string]: unknown };

const header = (description: string, schema: Json = { type: "string" }) => ({ description, schema });

export const headers = {
  requestId: header(
    "This request's id, `req_` and 22 characters, on every response (errors and preflights included); quote it when " +
      "asking for help. An incoming `x-request-id` is ignored.",
  ),
  rateLimitLimit: header(
    "Requests allowed per window for this key. The three `RateLimit-*` headers are on every response to an " +
      "authenticated request.",
    { type: "integer" },
  ),
  rateLimitRemaining: header("Requests left in the current window.", { type: "integer" }),
  rateLimitReset: header("Seconds until the window resets.", { type: "integer" }),
  creditsRemaining: header(
    "The account's credit balance after this request, or the balance that was too low (`402`). On a replay, the " +
      "value at the time of the original request.",
    { type: "integer" },
  ),
  retryAfter: header("Seconds to wait before retrying: on every `429` and every `503`.", { type: "integer" }),
  wwwAuthenticate: header('`Bearer realm="ocr"`, on `401`.'),
  allow: header("Methods this path serves: on `405` and on the `OPTIONS` answer."),
  replayed: header("`true` when the response is a replay for an Idempotency-Key (not charged again)."),
  location: header("On `202`: the job's status URL, relative: `/api/ocr/jobs/{id}`."),
  preferenceApplied: header("`respond-async`: the request became an asynchronous job (RFC 7240)."),
  jobRetryAfter: header(
    "Seconds to wait before asking again, while the job is `queued` or `running`; absent once it has ended. When " +
      "the job's next change is likely, from its pace (the time since it started over the pages read so far; before " +
      "the first page, the expected time of a page, or half the time it has waited when longer), 1–30 s. Pages of " +
      "17 s each: `Retry-After: 17`.",
    { type: "integer" },
  ),
  link: header('`<URL of the next part>; rel="next"` when this part does not hold every page asked for (as `next`).'),
};

export const rateLimitHeaders = {
  "RateLimit-Limit": { $ref: "#/components/headers/RateLimitLimit" },
  "RateLimit-Remaining": { $ref: "#/components/headers/RateLimitRemaining" },
  "RateLimit-Reset": { $ref: "#/components/headers/RateLimitReset" },
};
export const requestIdHeader = { "x-request-id": { $ref: "#/components/headers/RequestId" } };

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
 * this operation (the catalogue's `when` is the service-wide text), in the description and as its example's own
 * `description` (docs/api.md's table of the job routes' errors reads it there).
 */
export function errorResponses(codes: ErrorCode[], notes: Partial<Record<ErrorCode, string>> = {}): Json {
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
              {
                ...(notes[code] && { description: notes[code] }),
                value: { success: false, error: { code, message: "…" }, requestId: "req_3q2Vw0mVnUuD8bFq6xkKjg" },
              },
            ]),
          ),
        },
      },
    };
  }
  return responses;
}

/** Component schemas from the zod schemas: requests as the input side, responses as the output side. */
export function componentSchemas(): Record<string, Json> {
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
export function queryParameters(schema: z.ZodType): Json[] {
  const json = z.toJSONSchema(schema, { target: "draft-2020-12", io: "input" }) as {
    properties?: Record<string, Json>;
    required?: string[];
  };
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property;
    return { name, in: "query", required: json.required?.includes(name) ?? false, description, schema: rest };
  });
}

export const idempotencyKeyParameter = (description: string): Json => ({
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

export const jobIdParameter: Json = {
  name: "id",
  in: "path",
  required: true,
  description:
    "The job's id (`jobId`), as `Location` and `links` give it. A malformed, unknown or another account's id is `404`.",
  schema: { type: "string", pattern: JOB_ID_PATTERN },
};

export function preflightOperation(operationId: string): Json {
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

export const EXAMPLE_JOB_ID = "job_Vq3rD0kOaB2sYt7uXw9zQA";

/** An example job; `single`: as the status of one job answers it (with `failedPages`), not as the list does. */
export function exampleJob(status: "queued" | "running" | "succeeded", single = true): Json {
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
