import { z } from "zod";
import { creditsResponseSchema, ocrOptionsSchema, ocrRequestSchema, ocrResponseSchema } from "@/lib/api-schemas";
import { getEnv } from "@/lib/env";
import { errorCatalogue, errorCodes } from "@/lib/error-catalogue";
import { errorBodySchema, errorStatus, type ErrorCode } from "@/lib/errors";
import { CORS_ALLOW_HEADERS } from "@/lib/http";
import { formatMegabytes } from "@/lib/input";
import { ocrDocumentSchema } from "@/lib/ocr";
import { SERVICE_VERSION } from "@/lib/version";

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
  if (codes.some((code) => code === "rate_limited" || code === "overloaded")) {
    result["Retry-After"] = { $ref: "#/components/headers/RetryAfter" };
  }
  if (codes.includes("insufficient_credits")) result["x-credits-remaining"] = { $ref: "#/components/headers/CreditsRemaining" };
  return result;
}

/** One response object per status, listing the codes that use it and when. */
function errorResponses(codes: ErrorCode[]): Json {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(errorStatus[code], [...(byStatus.get(errorStatus[code]) ?? []), code]);
  const responses: Json = {};
  for (const [status, statusCodes] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: statusCodes.map((code) => `\`${code}\`: ${errorCatalogue[code].when}`).join(". "),
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

function buildOpenApiDocument(): Json {
  const env = getEnv();
  const processErrors = errorCodes.filter((code) => code !== "not_found");
  const limits = [
    `inline (base64) file ${formatMegabytes(env.MAX_INLINE_BYTES)} decoded`,
    `URL file ${formatMegabytes(env.MAX_URL_BYTES)}`,
    `URL fetch ${env.URL_FETCH_TIMEOUT_MS / 1000} s and ${env.URL_MAX_REDIRECTS} redirects, public http(s) addresses only`,
    `PDF pages ${env.MAX_PDF_PAGES}`,
    `image pixels ${Math.round(env.MAX_IMAGE_PIXELS / 1e6)} megapixels`,
    `request deadline ${env.REQUEST_DEADLINE_MS / 1000} s`,
    `rate limit ${env.RATE_LIMIT_PER_MINUTE} requests per minute per key`,
  ];

  return {
    openapi: "3.1.0",
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    info: {
      title: "OCR API",
      version: SERVICE_VERSION,
      description:
        "Extract text from PDF, JPEG, PNG and WebP files, sent as base64 or fetched from a URL; synchronous. " +
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
            "With an `Idempotency-Key`, a retry within 24 h gets the stored response without being charged again.",
          parameters: [
            {
              name: "Idempotency-Key",
              in: "header",
              required: false,
              description:
                "1–255 visible ASCII characters, unique per logical request (e.g. a UUID). The same key with the same " +
                "body replays the stored response (marked `Idempotent-Replayed: true`); while the first is running, " +
                "409; with another body, 422. 5xx, 402 and 429 answers are not stored, so a retry runs again.",
              schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e]+$" },
            },
          ],
          requestBody: {
            required: true,
            content: {
              "application/json": {
                schema: { $ref: "#/components/schemas/OcrRequest" },
                examples: {
                  base64: { summary: "base64 input", value: { image: "iVBORw0KGgoAAAANSUhEUgAA…", options: { format: "text" } } },
                  url: {
                    summary: "URL input",
                    value: { imageUrl: "https://example.com/scan.pdf", options: { format: "markdown", pages: "1-3" } },
                  },
                },
              },
            },
          },
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
            ...errorResponses(processErrors),
          },
        },
        options: {
          operationId: "processDocumentPreflight",
          summary: "CORS preflight",
          security: [],
          responses: {
            "204": {
              description: `CORS preflight answer; allowed request headers: ${CORS_ALLOW_HEADERS.join(", ")}.`,
              headers: { ...requestIdHeader, Allow: { $ref: "#/components/headers/Allow" } },
            },
          },
        },
      },
      "/api/credits": {
        get: {
          operationId: "getCredits",
          summary: "Credit balance",
          description: "The credits left on the account behind the key, also in `x-credits-remaining`. Free: nothing is charged.",
          responses: {
            "200": {
              description: "The balance.",
              headers: { ...requestIdHeader, ...rateLimitHeaders, "x-credits-remaining": { $ref: "#/components/headers/CreditsRemaining" } },
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
            "200": { description: "OpenAPI 3.1 document.", headers: requestIdHeader, content: { "application/json": {} } },
            ...errorResponses(["method_not_allowed", "internal_error"]),
          },
        },
      },
    },
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        ApiKeyHeader: { type: "apiKey", in: "header", name: "x-api-key", description: "An API key from the settings page." },
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
