import { randomUUID } from "node:crypto";
import { z } from "zod";
import {
  creditsResponseSchema,
  jobListSchema,
  jobResultSchema,
  jobViewSchema,
  ocrResponseSchema,
} from "@/lib/api/schemas";
import { errorBodySchema } from "@/lib/api/errors";
import { MIN_PREFER_WAIT_S, type OutputFormat } from "@/lib/vocabulary";
import type { Config } from "./config";
import { CliError, EXIT, exitCodeForStatus } from "./errors";
import { NetworkError, retryAfterMs, sendWithRetry, TRANSIENT_STATUSES, type RetryInfo } from "./http";

/** `30 s`, `2.5 s`. */
function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

const NOT_TIMEOUTS: ReadonlySet<number> = new Set([...TRANSIENT_STATUSES].filter((status) => status !== 504));

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

/**
 * The job answers (`POST /api/ocr/jobs` 202, `GET`/`DELETE /api/ocr/jobs/{id}`, the list, a result part), loosened
 * the same way: fields a later server adds pass through (`ocr jobs get --json` prints them), and a status this build
 * does not know is shown rather than taken for a foreign answer.
 */
export const jobAnswerSchema = jobViewSchema.extend({ status: z.string() }).loose();
export type JobAnswer = z.infer<typeof jobAnswerSchema>;
const jobListAnswerSchema = jobListSchema.extend({ jobs: z.array(jobAnswerSchema) }).loose();
export type JobListAnswer = z.infer<typeof jobListAnswerSchema>;
const jobResultAnswerSchema = jobResultSchema.extend({ status: z.string() }).loose();
export type JobResultAnswer = z.infer<typeof jobResultAnswerSchema>;

/** `x-credits-remaining`: a non-negative integer, or null when absent or malformed. */
function parseCreditsHeader(value: string | null): number | null {
  if (value === null || !/^\s*\d+\s*$/.test(value)) return null;
  return Number(value);
}

/**
 * `POST /api/ocr/process` and `POST /api/ocr/jobs` request (docs/api.md#request-forms): a local file goes as the raw
 * body (`file`, its options in the query: a third less than base64, and the service's whole inline limit), a URL as
 * JSON `imageUrl`.
 */
export interface OcrRequestBody {
  /** The file itself: sent as the body (`application/octet-stream`, the service reads the type from the bytes). */
  file?: Uint8Array;
  image?: string;
  imageUrl?: string;
  options?: { format?: OutputFormat; language?: string; pages?: string };
  /** Jobs only: where the job's end is announced. */
  webhook?: { url: string };
}

interface ExtractAnswer {
  kind: "read";
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

/** Seconds kept between the `wait` the service is asked for and the CLI's own timeout: upload, answer, clocks. */
const WAIT_MARGIN_S = 5;

/**
 * The `Prefer: wait=N` of a synchronous read with a timeout of `timeoutMs` per attempt: the service answers by then
 * (the text, a job, or `504`), before the CLI stops waiting — the CLI's deadline follows the service's, never the
 * other way round. At least {@link MIN_PREFER_WAIT_S}; the service narrows it to its own deadline (55 s).
 */
export function preferWaitSeconds(timeoutMs: number): number {
  return Math.max(MIN_PREFER_WAIT_S, Math.floor(timeoutMs / 1000) - WAIT_MARGIN_S);
}

/** A synchronous read sent and not answered within the timeout: the service may have been reading it all along. */
export class NoAnswerInTime extends CliError {
  constructor(
    readonly timeoutMs: number,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(EXIT.other, message, options);
    this.name = "NoAnswerInTime";
  }
}

/**
 * One document through `POST /api/ocr/process`, with one Idempotency-Key for all attempts. It asks for an answer
 * within the timeout (`Prefer: wait=N`, {@link preferWaitSeconds}); with `asyncIfLong`, `Prefer: respond-async,
 * wait=N`: the service reads the document now when it expects to be done in N seconds, else answers `202` with a
 * job (`kind: "job"`). A read is never retried after a timeout — neither a `504` nor an attempt without an answer
 * ({@link NoAnswerInTime}): the same document would take as long again. Throws {@link ServiceError} for an error
 * answer, a {@link CliError} when the service is out of reach.
 */
export async function extractDocument(
  config: Config,
  body: OcrRequestBody,
  options: {
    signal?: AbortSignal;
    onRetry?: (info: RetryInfo) => void;
    idempotencyKey?: string;
    /** Let the service answer with a job when the reading is expected to take longer than the wait. */
    asyncIfLong?: boolean;
  } = {},
): Promise<ExtractAnswer | { kind: "job"; job: JobAnswer; creditsRemaining: number | null }> {
  const key = requireKey(config);
  const wait = preferWaitSeconds(config.timeoutMs);
  // The attempt outlasts the wait the service was given (a timeout under 10 s is stretched to it).
  const timeoutMs = Math.max(config.timeoutMs, (wait + WAIT_MARGIN_S) * 1000);
  const { url, response, json } = await postDocument(config, key, "/api/ocr/process", body, {
    signal: options.signal,
    onRetry: options.onRetry,
    idempotencyKey: options.idempotencyKey ?? randomUUID(),
    retryStatuses: NOT_TIMEOUTS,
    retryTimeouts: false,
    timeoutMs,
    headers: { prefer: options.asyncIfLong ? `respond-async, wait=${wait}` : `wait=${wait}` },
  });
  if (response.status === 202) {
    const job = jobAnswerSchema.safeParse(json);
    if (!job.success) throw unexpectedAnswer(response, url, "a 202 without the job's fields");
    return {
      kind: "job",
      job: job.data,
      creditsRemaining: parseCreditsHeader(response.headers.get("x-credits-remaining")),
    };
  }
  const parsed = ocrResultSchema.safeParse(json);
  if (!parsed.success) throw unexpectedAnswer(response, url, "a 200 without the OCR response fields");
  return {
    kind: "read",
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
  const balance =
    balanceSchema.safeParse(json).data?.balance ?? parseCreditsHeader(response.headers.get("x-credits-remaining"));
  if (balance === null) throw unexpectedAnswer(response, url, "a 200 without a balance");
  return balance;
}

/** Job ids as the service makes them (`job_` and 22 base64url characters): anything else is refused before a request. */
export const JOB_ID = /^job_[A-Za-z0-9_-]{22}$/;

/**
 * A link the service gave (`links.self`, `links.result`, a result's `next`), relative to the service's root, as a
 * URL under the configured base URL. Only the job routes are followed: the key never goes anywhere else.
 */
export function jobRouteUrl(config: Config, link: string): string {
  if (!/^\/api\/ocr\/jobs\/job_[A-Za-z0-9_-]{22}(\/result)?(\?[^#\s]*)?$/.test(link)) {
    throw new CliError(
      EXIT.other,
      `the service named ${JSON.stringify(link.slice(0, 120))} as a job link, which is not one of its job routes`,
    );
  }
  return `${config.baseUrl}${link}`;
}

interface JobCall {
  signal?: AbortSignal;
  onRetry?: (info: RetryInfo) => void;
}

/**
 * Submit a document as an asynchronous job (`POST /api/ocr/jobs`, the body of /process), with the configured retries
 * and one Idempotency-Key for its attempts: a retry after a lost answer gets the same job, not a second one.
 */
export async function submitJob(
  config: Config,
  body: OcrRequestBody,
  options: JobCall & { idempotencyKey?: string } = {},
): Promise<{ job: JobAnswer; creditsRemaining: number | null }> {
  const key = requireKey(config);
  const { url, response, json } = await postDocument(config, key, "/api/ocr/jobs", body, {
    ...options,
    idempotencyKey: options.idempotencyKey ?? randomUUID(),
  });
  const job = jobAnswerSchema.safeParse(json);
  if (!job.success) throw unexpectedAnswer(response, url, "an answer without the job's fields");
  return { job: job.data, creditsRemaining: parseCreditsHeader(response.headers.get("x-credits-remaining")) };
}

/**
 * POST a document to `path`: a local file as the raw body with its options (and webhook) in the query, otherwise
 * JSON. A service from before raw bodies answers them `415` asking for JSON: the file then goes again as base64
 * (within its 3 MiB inline limit of that time). Throws the service's error for any other failure.
 */
async function postDocument(
  config: Config,
  key: string,
  path: string,
  body: OcrRequestBody,
  options: Parameters<typeof send>[3],
): Promise<{ url: string; response: Response; json: unknown }> {
  const headers = { ...headersFor(config, key), ...options.headers };
  const { file, ...rest } = body;
  if (file !== undefined) {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(rest.options ?? {})) if (value !== undefined) query.set(name, value);
    if (rest.webhook) query.set("webhook", rest.webhook.url);
    const url = `${config.baseUrl}${path}${query.size > 0 ? `?${query}` : ""}`;
    const response = await send(
      url,
      config,
      { method: "POST", headers: { ...headers, "content-type": "application/octet-stream" }, body: file as BodyInit },
      options,
    );
    const json = await readJson(response);
    if (response.ok) return { url, response, json };
    const error = toServiceError(response, json, url);
    if (!(
      error instanceof ServiceError &&
      error.status === 415 &&
      error.message.includes("Send the request body as JSON")
    ))
      throw error;
    // Nothing was done; the 415 is stored under the first Idempotency-Key, so the JSON attempt takes a key of its own.
    const json64 = { ...rest, image: Buffer.from(file).toString("base64") };
    return postDocument(config, key, path, json64, { ...options, idempotencyKey: randomUUID() });
  }
  const url = `${config.baseUrl}${path}`;
  const response = await send(
    url,
    config,
    { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) },
    options,
  );
  const json = await readJson(response);
  if (!response.ok) throw toServiceError(response, json, url);
  return { url, response, json };
}

/** `GET /api/ocr/jobs/{id}`: the job, and how long the service asks a poller to wait (`Retry-After`) while it runs. */
export async function getJob(
  config: Config,
  jobId: string,
  options: JobCall = {},
): Promise<{ job: JobAnswer; retryAfterMs: number | null }> {
  const response = await jobRequest(config, `/api/ocr/jobs/${jobId}`, "GET", options);
  const job = jobAnswerSchema.safeParse(response.json);
  if (!job.success) throw unexpectedAnswer(response.response, response.url, "an answer without the job's fields");
  return { job: job.data, retryAfterMs: retryAfterMs(response.response.headers.get("retry-after")) };
}

/** `DELETE /api/ocr/jobs/{id}`: the job as it is after the cancel (one that had ended is answered unchanged). */
export async function cancelJob(config: Config, jobId: string, options: JobCall = {}): Promise<JobAnswer> {
  const response = await jobRequest(config, `/api/ocr/jobs/${jobId}`, "DELETE", {
    ...options,
    idempotencyKey: randomUUID(),
  });
  const job = jobAnswerSchema.safeParse(response.json);
  if (!job.success) throw unexpectedAnswer(response.response, response.url, "an answer without the job's fields");
  return job.data;
}

/** `GET /api/ocr/jobs?limit=…&cursor=…`: the account's jobs, newest first. */
export async function listJobs(
  config: Config,
  query: { limit?: number; cursor?: string },
  options: JobCall = {},
): Promise<JobListAnswer> {
  const search = new URLSearchParams();
  if (query.limit !== undefined) search.set("limit", String(query.limit));
  if (query.cursor !== undefined) search.set("cursor", query.cursor);
  const suffix = search.size > 0 ? `?${search}` : "";
  const response = await jobRequest(config, `/api/ocr/jobs${suffix}`, "GET", options);
  const list = jobListAnswerSchema.safeParse(response.json);
  if (!list.success) throw unexpectedAnswer(response.response, response.url, "an answer without the job list");
  return list.data;
}

/** One part of a job's result: `link` is `links.result` (with `format` / `pages`) or a previous part's `next`. */
export async function getJobResultPart(config: Config, link: string, options: JobCall = {}): Promise<JobResultAnswer> {
  const response = await jobRequest(config, link, "GET", options);
  const part = jobResultAnswerSchema.safeParse(response.json);
  if (!part.success) throw unexpectedAnswer(response.response, response.url, "an answer without the result's fields");
  return part.data;
}

/**
 * `GET /api/ocr/jobs/{id}/result?format=pdf`: the job's searchable PDF, whole (the service streams it, in no parts),
 * and the pages it lacks (not read yet, or failed), from `x-missing-pages`.
 */
export async function getJobPdf(
  config: Config,
  job: Pick<JobAnswer, "links">,
  options: JobCall & { pages?: string } = {},
): Promise<{ pdf: Uint8Array; missingPages: string | null }> {
  const key = requireKey(config);
  const query = new URLSearchParams({ format: "pdf", ...(options.pages && { pages: options.pages }) });
  const url = jobRouteUrl(config, `${job.links.result}?${query}`);
  const response = await send(url, config, { method: "GET", headers: headersFor(config, key) }, options);
  if (!response.ok) throw toServiceError(response, await readJson(response), url);
  if (!(response.headers.get("content-type") ?? "").startsWith("application/pdf")) {
    throw unexpectedAnswer(response, url, "an answer that is not application/pdf");
  }
  const pdf = new Uint8Array(await response.arrayBuffer());
  if (new TextDecoder().decode(pdf.subarray(0, 5)) !== "%PDF-")
    throw unexpectedAnswer(response, url, "a file that is not a PDF");
  return { pdf, missingPages: response.headers.get("x-missing-pages") };
}

async function jobRequest(
  config: Config,
  link: string,
  method: "GET" | "DELETE",
  options: JobCall & { idempotencyKey?: string },
): Promise<{ response: Response; json: unknown; url: string }> {
  const key = requireKey(config);
  const url = link.startsWith("/api/ocr/jobs/") ? jobRouteUrl(config, link) : `${config.baseUrl}${link}`;
  const response = await send(url, config, { method, headers: headersFor(config, key) }, options);
  const json = await readJson(response);
  if (!response.ok) throw toServiceError(response, json, url);
  return { response, json, url };
}

async function send(
  url: string,
  config: Config,
  init: RequestInit,
  options: {
    signal?: AbortSignal;
    onRetry?: (info: RetryInfo) => void;
    idempotencyKey?: string;
    retryStatuses?: ReadonlySet<number>;
    retryTimeouts?: boolean;
    /** Per attempt; default `config.timeoutMs`. */
    timeoutMs?: number;
    /** Extra request headers (`postDocument` sets them). */
    headers?: Record<string, string>;
  },
): Promise<Response> {
  const { headers: _headers, ...sendOptions } = options;
  const timeoutMs = options.timeoutMs ?? config.timeoutMs;
  try {
    return await sendWithRetry(url, init, { retries: config.retries, ...sendOptions, timeoutMs });
  } catch (error) {
    if (error instanceof NetworkError && error.timedOut && options.retryTimeouts === false) {
      // An answer that did not come in time is not the service being down: say what happened.
      throw new NoAnswerInTime(
        timeoutMs,
        `no answer from ${config.baseUrl} within ${formatSeconds(timeoutMs)} (--timeout): the service was still ` +
          "reading it or the connection stalled (a read stopped by the client hanging up is not charged)",
        { cause: error },
      );
    }
    if (error instanceof NetworkError) {
      throw new CliError(
        EXIT.other,
        `${error.message} — is the service running at ${config.baseUrl}? (--base-url / OCR_BASE_URL)`,
        {
          cause: error,
        },
      );
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
  return new ServiceError(
    response.status,
    code.slice(0, 60),
    message.slice(0, 1000),
    parsed.data.requestId ?? response.headers.get("x-request-id") ?? undefined,
  );
}

/** Not the service's answer (a proxy's error page, a wrong --base-url): exit 1, whatever the status. */
function unexpectedAnswer(response: Response, url: string, what: string): CliError {
  return new CliError(EXIT.other, `HTTP ${response.status} from ${url}: ${what} — check --base-url / OCR_BASE_URL`);
}
