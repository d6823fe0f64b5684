/**
 * One HTTP exchange with the service, retried as docs/cli.md documents: a timeout per attempt
 * (30 000 ms) and up to 3 retries of transient failures — network errors, timeouts, 429, 502, 503, 504 — waiting for
 * `Retry-After` when the service sends it. Every attempt carries the same `Idempotency-Key`, so a retry after a lost
 * answer replays the first result instead of reading (and charging) the file again. A synchronous read is not
 * retried after a timeout (`retryTimeouts: false`): the same document would take as long again.
 */

/** Statuses worth another attempt of the same request. */
export const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/** A `Retry-After` longer than this is not waited for: the answer is reported instead. */
const MAX_RETRY_AFTER_MS = 120_000;
/** While an earlier attempt with the same Idempotency-Key is still running (`409`), ask again this often. */
const CONFLICT_POLL_MS = 2_000;

export interface RetryInfo {
  /** The attempt that failed (1 = the first). */
  attempt: number;
  delayMs: number;
  reason: string;
}

interface SendOptions {
  /** Per attempt, in ms: until the whole answer is read (for an event stream, until its headers). */
  timeoutMs: number;
  /** Attempts after the first one for transient failures. */
  retries: number;
  /** Sent with every attempt of this request. */
  idempotencyKey?: string;
  /** Statuses retried (default: 429, 502, 503, 504). */
  retryStatuses?: ReadonlySet<number>;
  /** Retry an attempt that had no answer within `timeoutMs` (default true); false: {@link NetworkError} `timedOut`. */
  retryTimeouts?: boolean;
  /** The caller's cancellation: never retried. */
  signal?: AbortSignal;
  onRetry?: (info: RetryInfo) => void;
  /** Default: the global `fetch`. */
  fetch?: typeof fetch;
}

/** No HTTP answer at all (connection refused, DNS, reset, timeout), after every retry. */
export class NetworkError extends Error {
  /** The last attempt was sent and had no answer within the timeout (the service may be working on it). */
  readonly timedOut: boolean;
  constructor(message: string, options: { cause?: unknown; timedOut?: boolean } = {}) {
    super(message, options);
    this.name = "NetworkError";
    this.timedOut = options.timedOut ?? false;
  }
}

class AttemptTimeout extends Error {}

/**
 * Send `init` to `url` with retries; resolves with the last answer (whatever its status) or rejects with a
 * {@link NetworkError}. The body of the answer is already read (so the timeout covers it), except for
 * `text/event-stream` answers, which are returned as they arrive.
 */
export async function sendWithRetry(url: string | URL, init: RequestInit, options: SendOptions): Promise<Response> {
  const started = Date.now();
  // Polling a 409 (an earlier attempt still running) does not use up retries, but stops after this long.
  const conflictBudgetMs = (options.retries + 1) * options.timeoutMs;
  const headers = new Headers(init.headers);
  if (options.idempotencyKey) headers.set("idempotency-key", options.idempotencyKey);
  let retriesUsed = 0;

  for (let attempt = 1; ; attempt++) {
    let response: Response;
    try {
      response = await attemptOnce(url, { ...init, headers }, options);
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason ?? error;
      const reason = describeNetworkError(error, options.timeoutMs);
      const timedOut = error instanceof AttemptTimeout;
      if (retriesUsed >= options.retries || (timedOut && options.retryTimeouts === false)) {
        const tries = attempt === 1 ? "" : `, ${attempt} attempts`;
        throw new NetworkError(`no answer from ${new URL(url).origin} (${reason}${tries})`, { cause: error, timedOut });
      }
      retriesUsed += 1;
      await pause({ attempt, delayMs: backoffMs(retriesUsed), reason }, options);
      continue;
    }

    if ((options.retryStatuses ?? TRANSIENT_STATUSES).has(response.status) && retriesUsed < options.retries) {
      const delayMs = retryAfterMs(response.headers.get("retry-after")) ?? backoffMs(retriesUsed + 1);
      if (delayMs <= MAX_RETRY_AFTER_MS) {
        retriesUsed += 1;
        await pause({ attempt, delayMs, reason: `HTTP ${response.status}${await errorCodeOf(response)}` }, options);
        continue;
      }
    }
    if (response.status === 409 && options.idempotencyKey && Date.now() - started < conflictBudgetMs) {
      const delayMs = retryAfterMs(response.headers.get("retry-after")) ?? CONFLICT_POLL_MS;
      await pause({ attempt, delayMs, reason: "HTTP 409: an earlier attempt is still running" }, options);
      continue;
    }
    return response;
  }
}

async function attemptOnce(url: string | URL, init: RequestInit, options: SendOptions): Promise<Response> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new AttemptTimeout()), options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([controller.signal, options.signal]) : controller.signal;
  try {
    const response = await (options.fetch ?? fetch)(url, { ...init, signal });
    if (isEventStream(response)) return response;
    const body = await response.arrayBuffer();
    const empty = [101, 204, 205, 304].includes(response.status);
    return new Response(empty ? null : body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  } catch (error) {
    throw controller.signal.aborted ? controller.signal.reason : error;
  } finally {
    clearTimeout(timer);
  }
}

function isEventStream(response: Response): boolean {
  return response.ok && (response.headers.get("content-type") ?? "").toLowerCase().startsWith("text/event-stream");
}

async function pause(info: RetryInfo, options: SendOptions): Promise<void> {
  options.onRetry?.(info);
  await sleep(info.delayMs, options.signal);
}

/** 0.5 s, 1 s, 2 s, … up to 8 s, ±20 % so that clients that failed together do not retry together. */
export function backoffMs(retry: number): number {
  const base = Math.min(8_000, 500 * 2 ** Math.max(0, retry - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** `Retry-After` in ms: delay-seconds or an HTTP date (RFC 9110 §10.2.3); null when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

async function errorCodeOf(response: Response): Promise<string> {
  try {
    const body: unknown = await response.clone().json();
    const code = (body as { error?: { code?: unknown } } | null)?.error?.code;
    return typeof code === "string" ? ` ${code.slice(0, 40)}` : "";
  } catch {
    return "";
  }
}

function describeNetworkError(error: unknown, timeoutMs: number): string {
  if (error instanceof AttemptTimeout) return `timed out after ${timeoutMs} ms`;
  // undici puts the system error (ECONNREFUSED, ENOTFOUND, …) in `cause`.
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const code = (cause as { code?: unknown } | null)?.code;
  const message = cause instanceof Error ? cause.message : String(cause);
  return `network error${typeof code === "string" ? ` ${code}` : ""}: ${message.slice(0, 200)}`;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
