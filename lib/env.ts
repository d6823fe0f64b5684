import os from "node:os";
import { z } from "zod";
import { DEFAULT_MAX_INLINE_BYTES, VERCEL_MAX_INLINE_BYTES } from "@/lib/vocabulary";

const MiB = 1024 * 1024;

/** `maxDuration` of `/api/mcp` in seconds (the Vercel Hobby maximum). The route file repeats it as a literal. */
export const MCP_MAX_DURATION_S = 300;

/**
 * Default of `MCP_TOOL_DEADLINE_MS`: under the 30 s timeout of the sample client configuration (docs/mcp.md), so that a
 * call too slow for it ends as a `timeout` tool error (refunded) before the client gives up — instead of being
 * charged for an answer nobody receives, and again for each of its 3 retries.
 */
const DEFAULT_MCP_TOOL_DEADLINE_MS = 28_000;

const int = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback);
const optionalString = z
  .string()
  .trim()
  .transform((value) => value || undefined)
  .optional();
const flag = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0", "yes", "no", ""])
    .optional()
    .transform((value) => (value === undefined || value === "" ? fallback : ["true", "1", "yes"].includes(value)));

/**
 * Every environment variable the service reads, with the documented defaults (docs/configuration.md). Parsed on first use, so `next build`
 * needs no secrets. `.env.example` documents each.
 */
export const envSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),

  // OCR engine
  /** Languages requests may ask for; each needs its `@tesseract.js-data/<lang>` package. */
  OCR_LANGUAGES: z
    .string()
    .default("eng,fra,deu,spa,ita,por,nld")
    .transform((value) => value.split(/[\s,+]+/).filter(Boolean))
    .pipe(z.array(z.string().regex(/^[a-z_]{3,10}$/, "language codes look like eng, fra, chi_sim")).min(1)),
  /** Language used when a request names none. `auto`: English, re-read in another installed language if the text is clearly in it. */
  OCR_DEFAULT_LANGUAGE: z.string().default("auto"),
  /** OCR engine processes per instance, each with one Tesseract worker (default: available cores). Was `OCR_WORKERS`. */
  OCR_ENGINE_PROCESSES: z.coerce.number().int().min(1).max(64).optional(),
  /** Recognition jobs allowed to wait for an engine process before requests get `503 overloaded`. */
  OCR_QUEUE_LIMIT: int(64, 1),
  /**
   * Memory ceiling of one engine process (resident MB): a job that drives its process past it is stopped and
   * answered `413`. Every page is read in a separate process, so the ceiling is per job. Was `OCR_WORKER_MEMORY_MB`.
   */
  OCR_ENGINE_MEMORY_MB: int(1024, 128),
  /**
   * Recognizers, comma-separated: `tesseract` reads every page; `paddle` (PaddleOCR) also reads the pages Tesseract
   * was unsure of (receipts, noisy forms) and its reading is kept where it is better. `tesseract` alone turns it off.
   */
  OCR_ENGINES: z
    .string()
    .default("tesseract,paddle")
    .transform((value) => value.split(/[\s,+]+/).filter(Boolean))
    .pipe(
      z
        .array(z.enum(["tesseract", "paddle"], { message: "OCR_ENGINES lists tesseract and optionally paddle" }))
        .refine((engines) => engines.includes("tesseract"), "OCR_ENGINES must include tesseract (it reads every page)"),
    ),
  /**
   * Engine processes that only open PDFs and read their text layers (no Tesseract), so opens never wait behind OCR.
   * The second starts only when a PDF waits while the first is busy (one slow PDF does not hold up the others). Was
   * `OCR_INSPECT_WORKERS`.
   */
  OCR_INSPECT_PROCESSES: int(2, 1),
  /**
   * Keep a process's Tesseract thread while PaddleOCR reads a page, instead of stopping it first and starting it again
   * for the next page: on corpus-dev 4–13% less engine CPU per page, more peak RSS (1307–1362 MiB against 1146–1327 MiB
   * over runs of the bench; docs/decisions.md#speed-profile).
   */
  OCR_KEEP_TESSERACT_FOR_PADDLE: flag(false),
  /**
   * Which Tesseract the OCR processes read with. `auto` (default): the system's libtesseract 5 (Debian/Ubuntu
   * `libtesseract5`) loaded in the process through koffi where it loads, tesseract.js (WebAssembly) otherwise;
   * `native`: the library or nothing (a process that cannot load it does not start); `wasm`: always tesseract.js.
   * Same language data (the `@tesseract.js-data` packages), options and outputs either way (docs/engine.md).
   */
  OCR_TESSERACT: z.enum(["auto", "native", "wasm"]).default("auto"),
  /** The libtesseract to load: a file name the dynamic loader finds, or a path (default `libtesseract.so.5`). */
  OCR_TESSERACT_LIBRARY: optionalString,

  // Limits (docs/api.md#limits)
  /**
   * Largest file sent in the request: base64 (decoded), a multipart `file` or a raw body. Default 20 MiB, 4 MiB on
   * Vercel (`VERCEL=1`: its request bodies stop at 4.5 MB).
   */
  MAX_INLINE_BYTES: int(process.env.VERCEL === "1" ? VERCEL_MAX_INLINE_BYTES : DEFAULT_MAX_INLINE_BYTES, 1),
  MAX_URL_BYTES: int(25 * MiB, 1),
  /**
   * Private hosts `imageUrl` may reach (self-hosters: an internal MinIO, `127.0.0.1:9000`): host names, addresses
   * (each optionally `:port`) and CIDR ranges, comma-separated. Empty: only public addresses. Parsed and checked by
   * lib/input/allow-hosts.ts (`configuredAllowList`), which lib/startup.ts calls before the server serves.
   */
  URL_ALLOW_HOSTS: z.string().optional(),
  URL_FETCH_TIMEOUT_MS: int(15_000, 100),
  URL_MAX_REDIRECTS: int(3, 0),
  MAX_PDF_PAGES: int(50, 1),
  MAX_IMAGE_PIXELS: int(50_000_000, 1),
  /** Most bytes one PDF stream (page content, font, form) may inflate to; a PDF with a larger one is `413`. */
  MAX_PDF_STREAM_BYTES: int(128 * MiB, 1024),
  /**
   * Most processor time (ms) opening one PDF (structure, text layers, blank-page checks) or drawing one of its pages
   * for OCR may take; past it the request is `413`. Pages are also limited to 1,000,000 operations and forms nested
   * 16 deep.
   */
  MAX_PDF_WORK_MS: int(10_000, 100),
  REQUEST_DEADLINE_MS: int(55_000, 1000),
  RATE_LIMIT_PER_MINUTE: int(60, 1),
  /** Reads about jobs (status, result, list) per key per minute, counted apart from `RATE_LIMIT_PER_MINUTE`. */
  READ_RATE_LIMIT_PER_MINUTE: int(600, 1),
  /**
   * Unknown or revoked API keys one client address may send per minute (an IPv6 address counts by its /64); past it
   * the address gets `429` with `Retry-After` until its minute ends, before its key is even looked up.
   */
  KEY_FAILURES_PER_ADDRESS_PER_MINUTE: int(30, 1),
  /** OCR requests one account may have in flight on one instance; past it `429` with `Retry-After`. */
  ACCOUNT_MAX_IN_FLIGHT: int(4, 1),

  // Asynchronous jobs (docs/api.md#jobs, docs/configuration.md#jobs)
  /** Most pages one job reads. */
  MAX_JOB_PAGES: int(2_000, 1),
  /** Largest file a job fetches from `imageUrl` (inline files keep `MAX_INLINE_BYTES`). */
  MAX_JOB_URL_BYTES: int(200 * MiB, 1),
  /** Seconds a finished job's results are kept. */
  JOB_RESULT_TTL: int(24 * 60 * 60, 60),
  /** Seconds a job may take from submission to its end; past it, what it did not read is refunded. */
  JOB_MAX_DURATION: int(24 * 60 * 60, 60),
  /** Pages one account may have waiting in its unfinished jobs; a job past it is refused (`429`). */
  MAX_QUEUED_PAGES_PER_ACCOUNT: int(10_000, 1),
  /**
   * Bytes of job files one account may have stored at once: files of jobs queued or running, and of succeeded jobs
   * kept with their results (`JOB_RESULT_TTL`). A job past it is refused (`429`, with when the first file goes).
   * Default 400 MiB: two files of the largest size a job fetches (`MAX_JOB_URL_BYTES`).
   */
  MAX_JOB_BYTES_PER_ACCOUNT: int(400 * MiB, 1),
  /** Most time one page of a job may take in an engine process; past it the page fails alone (`timeout`). */
  JOB_PAGE_DEADLINE_MS: int(120_000, 1_000),
  /**
   * Who works the job queue. `background` (default, except on Vercel): every server process, and `npm run worker`;
   * `invoke` (default on Vercel): function invocations started after a submission and by the cron route; `off`: this
   * process takes no job work (another does).
   */
  JOBS_RUNNER: z.enum(["auto", "background", "invoke", "off"]).default("auto"),
  /** Invocations of the internal work route a submission starts (`invoke` runner). */
  JOB_FANOUT: int(4, 1),
  /** A taken task's lock: a process that died lets it lapse, and its task is taken over after it. */
  JOB_LOCK_MS: int(30_000, 1_000),
  /** How often every process looks for tasks whose process died. */
  JOB_STALLED_INTERVAL_MS: int(30_000, 500),
  /** This process's name on the pages it reads (default: a short hash of its host and pid). */
  JOB_WORKER_NAME: optionalString,
  // Webhooks (docs/api.md#webhooks, docs/configuration.md#webhooks)
  /** How long one delivery attempt may take (connect, send, the receiver's answer); past it the attempt failed. */
  WEBHOOK_TIMEOUT_MS: int(10_000, 100),
  /** First retry delay of a failed delivery; each next one doubles, up to 6 h apart. */
  WEBHOOK_RETRY_BASE_MS: int(60_000, 10),
  /** Attempts of one event in all (the default, 13, spreads them over about a day). */
  WEBHOOK_MAX_ATTEMPTS: int(13, 1),
  /** Deliveries one account may have in flight at once, across every process (its share of delivery capacity). */
  WEBHOOK_ACCOUNT_CONCURRENCY: int(2, 1),
  /**
   * Vercel sets it when "Protection Bypass for Automation" is on: the calls a submission makes to the internal work
   * route carry it (`x-vercel-protection-bypass`), so Deployment Protection does not refuse them.
   */
  VERCEL_AUTOMATION_BYPASS_SECRET: optionalString,

  /**
   * The service's public origin (`https://ocr.example.com`, scheme and host only). Its own calls (the internal work
   * route), the OAuth issuer and resource, and the absolute links of webhook events use it; none of them is ever
   * built from a request's `Host`. Unset: on Vercel the platform's URL of the deployment (`VERCEL_URL`, or
   * `VERCEL_PROJECT_PRODUCTION_URL` in production), elsewhere `http://127.0.0.1:$PORT` for the service's own calls
   * (lib/service-origin.ts).
   */
  SERVICE_URL: optionalString.pipe(
    z
      .url({ protocol: /^https?$/, message: "SERVICE_URL is an http(s) origin such as https://ocr.example.com" })
      .refine(
        (value) => new URL(value).pathname === "/" && !new URL(value).search && !new URL(value).hash,
        "SERVICE_URL is an origin only (no path, query or fragment)",
      )
      .transform((value) => new URL(value).origin)
      .optional(),
  ),
  /** The port a self-hosted server listens on (scripts/serve.mjs reads it too). */
  PORT: z.coerce.number().int().min(1).max(65_535).default(3000),
  /** Set by Vercel: the deployment's own host name (`ocr-abc123.vercel.app`) and the project's production one. */
  VERCEL_URL: optionalString,
  VERCEL_PROJECT_PRODUCTION_URL: optionalString,
  VERCEL_ENV: optionalString,

  // Accounts and credits
  FREE_CREDITS: int(100, 0),
  /** Sign-ups allowed per client address per hour (an IPv6 address counts by its /64). */
  SIGNUP_PER_ADDRESS_PER_HOUR: int(3, 1),
  /** Sign-ups allowed per hour across the whole deployment: a ceiling on free credits given away. */
  SIGNUP_PER_HOUR: int(100, 1),
  /** Sign-in attempts allowed per client address per 15 minutes, whatever the e-mail. */
  SIGNIN_PER_ADDRESS: int(30, 1),

  // Client addresses (lib/client-ip.ts) and slow clients (scripts/serve.mjs)
  /**
   * Proxies in front of a self-hosted server that append to `X-Forwarded-For`: 0 = the socket's address is the
   * client; N = the N-th entry from the right. Ignored on Vercel, whose edge sets the address.
   */
  TRUSTED_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),
  /**
   * Self-hosted (`npm start`, `npm run dev`): a connection whose headers take longer than this is closed. Read by
   * scripts/serve.mjs, which starts before this module can load and checks the same rule itself.
   */
  SERVER_HEADERS_TIMEOUT_MS: int(10_000, 1000),
  /** The same for the whole request (at least the headers' limit; scripts/serve.mjs takes the larger of the two). */
  SERVER_REQUEST_TIMEOUT_MS: int(30_000, 1000),

  // Store: Redis over REST (Upstash / Vercel KV) or TCP; none = the embedded memory store (development only)
  UPSTASH_REDIS_REST_URL: optionalString,
  UPSTASH_REDIS_REST_TOKEN: optionalString,
  KV_REST_API_URL: optionalString,
  KV_REST_API_TOKEN: optionalString,
  REDIS_URL: optionalString,
  REDIS_PREFIX: z.string().default("ocr:"),

  /** Bearer secret of `/api/cron/*` (Vercel sends it as `Authorization: Bearer $CRON_SECRET`). */
  CRON_SECRET: optionalString,

  /** Log one line per request (never keys or file content). */
  LOG_REQUESTS: flag(true),

  // MCP (/api/mcp): lib/mcp/config.ts turns these into the route's settings (`mcpConfig`)
  /** Budget of one `tools/call`, capped by `REQUEST_DEADLINE_MS`. */
  MCP_TOOL_DEADLINE_MS: int(DEFAULT_MCP_TOOL_DEADLINE_MS, 1000),
  /** Hard end of an SSE stream: it closes itself this long after opening, before the function's `maxDuration`. */
  MCP_SSE_LIFETIME_MS: int((MCP_MAX_DURATION_S - 5) * 1000, 1000),
  /** Interval of the `: ping` comment that keeps proxies from closing an idle stream. */
  MCP_SSE_PING_MS: int(15_000, 100),
  /** Open SSE streams one account may hold across all instances; past it `429` with `Retry-After`. */
  MCP_SSE_MAX_STREAMS_PER_ACCOUNT: int(20, 1),
  /** Open SSE streams one instance (process) holds at most; past it `503 overloaded` with `Retry-After`. */
  MCP_SSE_MAX_STREAMS_PER_INSTANCE: int(200, 1),
});

export type Env = z.infer<typeof envSchema> & { OCR_ENGINE_PROCESSES: number };

/**
 * Variables renamed when "worker" came to mean only the Tesseract worker inside an engine process (an engine process
 * is a child process of the server): the old name still works when the new one is not set, and the server says so
 * at start (`deprecationNotices`).
 */
export const RENAMED_VARIABLES: Readonly<Record<string, string>> = {
  OCR_WORKERS: "OCR_ENGINE_PROCESSES",
  OCR_INSPECT_WORKERS: "OCR_INSPECT_PROCESSES",
  OCR_WORKER_MEMORY_MB: "OCR_ENGINE_MEMORY_MB",
};

/** One line per renamed variable still set under its old name (printed at start: lib/startup.ts, scripts/worker.ts). */
export function deprecationNotices(source: Record<string, string | undefined> = process.env): string[] {
  return Object.entries(RENAMED_VARIABLES)
    .filter(([old]) => source[old] !== undefined)
    .map(([old, name]) =>
      source[name] === undefined
        ? `${old} is deprecated: rename it ${name}`
        : `${old} is deprecated and ignored: ${name} is set`,
    );
}

let cached: Env | undefined;

/**
 * Parse a set of variables with the defaults filled in. Throws one readable error listing every bad variable. Pure:
 * `getEnv` passes `process.env`; tests pass a literal to check defaults and errors without touching `process.env`.
 */
export function parseEnv(source: Record<string, string | undefined>): Env {
  const renamed = { ...source };
  for (const [old, name] of Object.entries(RENAMED_VARIABLES)) renamed[name] ??= source[old];
  const parsed = envSchema.safeParse(renamed);
  if (!parsed.success) {
    throw new Error(`Invalid configuration:\n${z.prettifyError(parsed.error)}`);
  }
  return {
    ...parsed.data,
    OCR_ENGINE_PROCESSES: parsed.data.OCR_ENGINE_PROCESSES ?? Math.max(1, os.availableParallelism()),
  };
}

/** The configuration of this process, parsed from `process.env` on first use and kept. */
export function getEnv(): Env {
  cached ??= parseEnv(process.env);
  return cached;
}

/** Forget the parsed configuration so the next `getEnv()` reads `process.env` again (tests, CLI). */
export function resetEnv(): void {
  cached = undefined;
}
