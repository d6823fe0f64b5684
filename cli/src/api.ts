import { randomUUID } from "node:crypto";
import { z } from "zod";
import { creditsResponseSchema, ocrResponseSchema } from "@/lib/api-schemas";
import { errorBodySchema } from "@/lib/errors";
import type { OutputFormat } from "@/lib/vocabulary";
import type { Config } from "./config";
import { CliError, EXIT, exitCodeForStatus } from "./errors";
import { NetworkError, sendWithRetry, type RetryInfo } from "./http";

/*
 * The service's answers as the CLI reads them: the service's own schemas (light modules, so the bundle stays free
 * of the engine), loosened where an installed CLI must outlive the server it was built with. Unknown fields pass;
 * an error code or input source this build does not know is still shown, not taken for a foreign answer; the
 * fields a server before them lacked (`pageCount`, `requestId`) may be absent.
 */

/** `POST /api/ocr/process` 200 body. */
const ocrResultSchema = ocrResponseSchema
  .extend({
    inputSource: z.string(),
    pageCount: ocrResponseSchema.shape.pageCount.optional(),
    requestId: ocrResponseSchema.shape.requestId.optional(),
  })
  .loose();
type OcrResult = z.infer<typeof ocrResultSchema>;

/** Every failure: `{ success: false, error: { code, message }, requestId }` (docs/api.md, Errors). */
export const errorAnswerSchema = errorBodySchema
  .extend({
    error: errorBodySchema.shape.error.extend({ code: z.string() }).loose(),
    requestId: errorBodySchema.shape.requestId.optional(),
  })
  .loose();

/** `GET /api/credits` 200 body: only `balance` is needed (the header `x-credits-remaining` carries the same number). */
const balanceSchema = creditsResponseSchema.pick({ success: true, balance: true }).partial({ success: true }).loose();

/** `x-credits-remaining`: a non-negative integer, or null when absent or malformed. */
function parseCreditsHeader(value: string | null): number | null {
  if (value === null || !/^\s*\d+\s*$/.test(value)) return null;
  return Number(value);
}

/** `POST /api/ocr/process` body (docs/api.md). */
export interface OcrRequestBody {
  image?: string;
  imageUrl?: string;
  options?: { format?: OutputFormat; language?: string; pages?: string };
}

interface ExtractAnswer {
  result: OcrResult;
  /** `x-credits-remaining`: the balance after this request. */
  creditsRemaining: number | null;
  /** True when the service replayed an earlier attempt's answer (`Idempotent-Replayed`). */
  replayed: boolean;
}

/** A failure the service reported (`{ error: { code, message } }`), or an answer that was not the service's. */
export class ServiceError extends CliError {
  readonly status: number;
  readonly code: string;
  readonly requestId?: string;

  constructor(status: number, code: string, message: string, requestId?: string, exitCode = exitCodeForStatus(status)) {
    super(exitCode, `${code}: ${message}${requestId ? ` (request ${requestId})` : ""}`);
    this.name = "ServiceError";
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

function requireKey(config: Config): string {
  if (config.apiKey) return config.apiKey;
  throw new CliError(
    EXIT.auth,
    `no API key: set FETCH_MCP_SERVER_API_KEY (or OCR_API_KEY) to a key from ${config.baseUrl}/settings`,
  );
}

function headersFor(config: Config, key: string): Record<string, string> {
  return { "x-api-key": key, "user-agent": config.userAgent, accept: "application/json" };
}

/**
 * One document through `POST /api/ocr/process`, with the configured timeout and retries and one Idempotency-Key
 * for all attempts. Throws {@link ServiceError} for an error answer, a {@link CliError} when the service is out of reach.
 */
export async function extractDocument(
  config: Config,
  body: OcrRequestBody,
  options: { signal?: AbortSignal; onRetry?: (info: RetryInfo) => void; idempotencyKey?: string } = {},
): Promise<ExtractAnswer> {
  const key = requireKey(config);
  const url = `${config.baseUrl}/api/ocr/process`;
  const response = await send(url, config, {
    method: "POST",
    headers: { ...headersFor(config, key), "content-type": "application/json" },
    body: JSON.stringify(body),
  }, { ...options, idempotencyKey: options.idempotencyKey ?? randomUUID() });
  const json = await readJson(response);
  if (!response.ok) throw toServiceError(response, json, url);
  const parsed = ocrResultSchema.safeParse(json);
  if (!parsed.success) throw unexpectedAnswer(response, url, "a 200 without the OCR response fields");
  return {
    result: parsed.data,
    creditsRemaining: parseCreditsHeader(response.headers.get("x-credits-remaining")),
    replayed: response.headers.get("idempotent-replayed") === "true",
  };
}

/** The account's balance from `GET /api/credits` (body `balance`, else the `x-credits-remaining` header). */
export async function fetchBalance(config: Config): Promise<number> {
  const key = requireKey(config);
  const url = `${config.baseUrl}/api/credits`;
  const response = await send(url, config, { method: "GET", headers: headersFor(config, key) }, {});
  const json = await readJson(response);
  if (response.status === 404 && !errorAnswerSchema.safeParse(json).success) {
    throw new CliError(
      EXIT.other,
      `this server has no balance endpoint (GET /api/credits answered 404). See the balance at ${config.baseUrl}/settings; ` +
        "`ocr extract --verbose` also prints the credits remaining after each file",
    );
  }
  if (!response.ok) throw toServiceError(response, json, url);
  const balance = balanceSchema.safeParse(json).data?.balance ?? parseCreditsHeader(response.headers.get("x-credits-remaining"));
  if (balance === null) throw unexpectedAnswer(response, url, "a 200 without a balance");
  return balance;
}

async function send(
  url: string,
  config: Config,
  init: RequestInit,
  options: { signal?: AbortSignal; onRetry?: (info: RetryInfo) => void; idempotencyKey?: string },
): Promise<Response> {
  try {
    return await sendWithRetry(url, init, { timeoutMs: config.timeoutMs, retries: config.retries, ...options });
  } catch (error) {
    if (error instanceof NetworkError) {
      throw new CliError(EXIT.other, `${error.message} — is the service running at ${config.baseUrl}? (--base-url / OCR_BASE_URL)`, {
        cause: error,
      });
    }
    throw error;
  }
}

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function toServiceError(response: Response, json: unknown, url: string): CliError {
  const parsed = errorAnswerSchema.safeParse(json);
  if (!parsed.success) return unexpectedAnswer(response, url, "an answer that is not the OCR service's");
  const { code, message } = parsed.data.error;
  return new ServiceError(response.status, code.slice(0, 60), message.slice(0, 1000), parsed.data.requestId ?? response.headers.get("x-request-id") ?? undefined);
}

/** Not the service's answer (a proxy's error page, a wrong --base-url): exit 1, whatever the status. */
function unexpectedAnswer(response: Response, url: string, what: string): CliError {
  return new CliError(
    EXIT.other,
    `HTTP ${response.status} from ${url}: ${what} — check --base-url / OCR_BASE_URL`,
  );
}
