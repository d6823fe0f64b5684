import { ApiError, isApiError, toApiError } from "@/lib/api/errors";
import { ocrRequestSchema, ocrUploadSchema, type OcrRequest } from "@/lib/api/schemas";
import { getBalance } from "@/lib/credits";
import type { Env } from "@/lib/env";
import { configuredAllowList, type ResolveHost } from "@/lib/input";
import { fromEngineError, queueJob, requireWorkQueue, workerName, type JobView, type Runtime } from "@/lib/jobs";
import { describeDocument, detectFileType, openDocument } from "@/lib/ocr";
import { acquireInFlight } from "./in-flight";
import { readNow, type InlineWatch, type ProcessAccount, type ProcessDocumentResult } from "./read-now";
import { throwIfEnded, withinScope, type RequestScope } from "@/lib/request-scope";
import type { Settings } from "@/lib/settings";
import type { OutputFormat } from "@/lib/vocabulary";
import type { Store } from "@/lib/store";
import { resolveJobWebhook } from "@/lib/webhooks";
import { checkDeclaredSize, inputSourceOf, loadDocument, sourceOfBody, type DocumentSource } from "./source";

/**
 * How the caller wants the document read:
 * - `read`: now, for the answer (REST `POST /api/ocr/process`): past the synchronous work limit, `413` naming the jobs;
 * - `job`: as an asynchronous job (REST `POST /api/ocr/jobs`, `Prefer: respond-async`, an MCP task);
 * - `fit`: now if it fits the caller's budget, else as a job (MCP `extract_text`): decided by the estimated work.
 */
export type IntakeMode = "read" | "job" | "fit";

/** `Runtime`: the engine pool, the work queue and the delivery queue (the request context's; tests give their own pool). */
export interface IntakeInput extends Runtime {
  /** The configuration (the request context's): limits, the default deadline. */
  env: Env;
  /** The modules' settings (the request context's): the jobs', the fetch's and the engine's limits. */
  settings: Pick<Settings, "jobs" | "fetch" | "ocr">;
  source: DocumentSource;
  options?: { format?: OutputFormat; pages?: string; language?: string };
  /** `webhook.url` of the request (jobs only; the account's default otherwise). */
  webhookUrl?: string;
  account: ProcessAccount;
  /** Unique per request: it keys the credit reservation and the ledger entries. */
  requestId: string;
  mode: IntakeMode;
  /** Epoch ms when the request arrived: the start of `processingTime` and of the default deadline. Default: now. */
  receivedAt?: number;
  /**
   * Epoch ms the answer is owed by (an MCP call's budget). Narrows the request's scope (lib/request-scope.ts) when
   * there is one. Default: `receivedAt + REQUEST_DEADLINE_MS`.
   */
  deadline?: number;
  /** Aborts the work too (MCP: the SDK's request signal, `notifications/cancelled`): unread pages are refunded. */
  cancel?: AbortSignal;
  /** DNS for a URL. Default: the system resolver (tests stand in for it). */
  resolveHost?: ResolveHost;
  /** The host the request came to (its `Host`): a URL of its own `/samples/<file>` is read from disk. */
  serverHost?: string;
  /** The origin the request came to (`https://host`): a job's webhook links are absolute with it. */
  origin?: string;
  /** Watch a read's job, so that a cancel of the job stops the read (MCP: `notifications/cancelled`). */
  watch?: InlineWatch;
}

/** What became of the document: read now (the answer), or a job (its view). */
export type IntakeOutcome =
  | { kind: "read"; result: ProcessDocumentResult }
  | {
      kind: "job";
      view: JobView;
      /** Balance after the job's pages were reserved (`x-credits-remaining`). */
      creditsRemaining: number;
      /** Why a `fit` document became a job, in a sentence (e.g. its expected time against the call's budget). */
      reason?: string;
    };

/** Time kept at the end of a `fit` caller's budget (the answer written, the charge settled): 3 s, a tenth of a short one. */
const FIT_MARGIN_MS = 3_000;
const FIT_MARGIN_SHARE = 0.1;

/**
 * The one way a document is taken in, by every surface: authenticate (the caller did) → cheap checks (declared size,
 * the job's webhook, a slot of the account's requests in flight, the type from the magic bytes, a balance of at least
 * one credit: `402` before any byte of a URL is fetched and before any inspection) → fetch or decode once (a URL streamed with the request's signal, cut at its byte cap) → inspect
 * once (type, pages, text layers, the expected work from the duration model) → reserve → read now, or a job. Every
 * step ends with the request's one signal (its deadline, or its client gone). Throws `ApiError`s with catalogued codes.
 */
export async function intake(store: Store, input: IntakeInput): Promise<IntakeOutcome> {
  const receivedAt = input.receivedAt ?? Date.now();
  const deadline = input.deadline ?? receivedAt + input.env.REQUEST_DEADLINE_MS;
  try {
    return await withinScope({ deadline, cancel: input.cancel }, (scope) => takeIn(store, input, scope, receivedAt));
  } catch (error) {
    throw fromEngineError(error, { pages: input.options?.pages, job: input.mode === "job" });
  }
}

async function takeIn(
  store: Store,
  input: IntakeInput,
  scope: RequestScope,
  receivedAt: number,
): Promise<IntakeOutcome> {
  const { account, source, env } = input;
  // `fit` needs somewhere to put what does not fit; without a job queue it reads what it can, as REST does.
  const mode: IntakeMode = input.mode === "fit" && input.workQueue === null ? "read" : input.mode;
  const settings = input.settings.jobs;
  const { format = "text", pages, language } = input.options ?? {};

  // Cheap checks, before any byte is fetched or decoded.
  if (mode === "job") requireWorkQueue(input.workQueue);
  const webhookUrl =
    mode === "job"
      ? await resolveJobWebhook(store, account.userId, input.webhookUrl, {
          resolveHost: input.resolveHost,
          allowHosts: configuredAllowList(env),
          deliveries: input.deliveries,
        })
      : undefined;
  checkDeclaredSize(source, env.MAX_INLINE_BYTES);
  const { pool } = input;
  // One account cannot fill an instance: its requests read now are limited (429 past it).
  using _inFlight =
    mode === "job"
      ? undefined
      : onDispose(
          acquireInFlight(account.userId, {
            limit: env.ACCOUNT_MAX_IN_FLIGHT,
            retryAfterS: Math.max(1, Math.ceil(pool.estimate("read-image") / 1000)),
          }),
        );
  // Not one credit left: `402` before a URL is fetched (a file sent in the body is first checked for its type).
  if (source.kind === "url") await requireCredit(store, account.userId);

  // Fetched or decoded once. A job takes a larger file by URL than a call that may read it now (REST's, MCP's).
  const bytes = await loadDocument(source, {
    signal: scope.signal,
    maxUrlBytes: mode === "job" ? settings.maxUrlBytes : env.MAX_URL_BYTES,
    maxInlineBytes: env.MAX_INLINE_BYTES,
    allowHosts: configuredAllowList(env),
    fetch: input.settings.fetch,
    // A large file may need longer than a request's fetch; the request's deadline still bounds it.
    ...(mode === "job" && {
      fetchTimeoutMs: Math.max(input.settings.fetch.timeoutMs, scope.deadline - Date.now() - 10_000),
    }),
    resolveHost: input.resolveHost,
    serverHost: input.serverHost,
  });
  throwIfEnded(scope.signal);
  if (source.kind !== "url") {
    detectFileType(bytes); // `415` from the magic bytes, before the balance
    await requireCredit(store, account.userId);
  }
  const inputSource = inputSourceOf(source);
  const tenant = account.userId;
  const toJob = async (
    document: Parameters<typeof queueJob>[1]["document"],
    reason?: string,
  ): Promise<IntakeOutcome> => {
    const queued = await queueJob(store, {
      bytes,
      inputSource,
      document,
      format,
      account,
      requestId: input.requestId,
      deadline: scope.deadline,
      webhookUrl,
      origin: input.origin,
      settings,
      queue: input.workQueue,
      deliveries: input.deliveries,
    });
    return { kind: "job", ...queued, ...(reason !== undefined && { reason }) };
  };

  // Inspected once: a job's structure only (its pages are looked at when they are read); a read's text layers too.
  if (mode === "job") {
    const signal = scope.signal;
    return toJob(
      await describeDocument(bytes, {
        pages,
        language,
        maxPages: settings.maxPages,
        deadline: scope.deadline,
        signal,
        env,
        ocr: input.settings.ocr,
        pool,
        tenant,
      }),
    );
  }
  const by = scope.deadline - Math.min(FIT_MARGIN_MS, FIT_MARGIN_SHARE * (scope.deadline - receivedAt));
  const document = await openDocument(bytes, {
    pages,
    language,
    deadline: scope.deadline,
    signal: scope.signal,
    pool,
    tenant,
    env,
    ocr: input.settings.ocr,
    ...(mode === "fit" && { fit: { by }, maxPages: settings.maxPages }),
  });
  await using _closed = onAsyncDispose(() => document.close().catch(() => undefined));
  if (document.overWork)
    return toJob(document, fitReason(document.overWork, document.estimateMs, by, env.MAX_PDF_PAGES));
  const result = await readNow(store, {
    document,
    bytes,
    inputSource,
    format,
    account,
    requestId: input.requestId,
    receivedAt,
    scope,
    settings,
    name: workerName(settings),
    watch: input.watch,
  });
  return { kind: "read", result };
}

/** `402` before anything is fetched: not even one credit is left (the exact need is known once the file is inspected). */
async function requireCredit(store: Store, userId: string): Promise<void> {
  const balance = await getBalance(store, userId);
  if (balance >= 1) return;
  throw new ApiError(
    "insufficient_credits",
    `Insufficient credits: this request needs 1 credit or more (1 per page) and the balance is ${balance}`,
    {
      headers: { "x-credits-remaining": String(balance) },
    },
  );
}

/** Why a `fit` document became a job, in the words of what the caller can see. */
function fitReason(why: "work" | "time", estimateMs: number, by: number, maxPdfPages: number): string {
  if (why === "work") return `it has more than ${maxPdfPages} pages of OCR work, the most one call reads`;
  const seconds = Math.max(1, Math.round(estimateMs / 1000));
  const budget = Math.max(0, Math.round((by - Date.now()) / 1000));
  return `reading it is expected to take about ${seconds} s, and this call has ${budget} s for it`;
}

/**
 * A request's body (`ocrRequestSchema`, validated by the intake) and the rest of the intake's input. With `file` (a
 * multipart `file` field or a raw body, lib/http/upload.ts), `body` holds only its options and webhook
 * (`ocrUploadSchema`).
 */
export type ProcessDocumentInput = Omit<IntakeInput, "source" | "options" | "mode" | "webhookUrl"> & {
  body: unknown;
  file?: Uint8Array;
};

/** REST's synchronous read (`POST /api/ocr/process`) of a JSON body, validated here so every caller gets the same 400s. */
export async function processDocument(store: Store, input: ProcessDocumentInput): Promise<ProcessDocumentResult> {
  const body = validBody(input.body, input.file !== undefined);
  if (body.webhook)
    throw new ApiError("invalid_request", "webhook is for jobs: POST /api/ocr/jobs, or send Prefer: respond-async");
  const outcome = await intake(store, { ...input, ...requestOf(body, input.file), mode: "read" }).catch(
    namingJobRoutes,
  );
  if (outcome.kind !== "read") throw new Error("intake: a read became a job");
  return outcome.result;
}

/**
 * REST's `Prefer: respond-async, wait=N` (`POST /api/ocr/process`): read now when the reading is expected to end
 * within the caller's wait, else a job — the decision of MCP's `extract_text` (mode `fit`, narrowed to `deadline`).
 * `webhook` is refused as for a read: whether it becomes a job is the service's choice.
 */
export async function readOrQueue(
  store: Store,
  input: ProcessDocumentInput & { deadline: number },
): Promise<IntakeOutcome> {
  const body = validBody(input.body, input.file !== undefined);
  if (body.webhook)
    throw new ApiError(
      "invalid_request",
      "webhook is for jobs: POST /api/ocr/jobs, or send Prefer: respond-async without wait (with wait the document may be read now)",
    );
  return intake(store, { ...input, ...requestOf(body, input.file), mode: "fit" }).catch(namingJobRoutes);
}

/** Where a document the request's deadline overtook can go: the `504` of a read names the job routes. */
const JOB_ROUTES_NEXT =
  "Nothing was charged. Send it as an asynchronous job instead: POST /api/ocr/jobs, or this route with " +
  "Prefer: respond-async (add wait=N to have it read now when it is expected to end within N seconds); then poll " +
  "GET /api/ocr/jobs/{id} and fetch GET /api/ocr/jobs/{id}/result.";

function namingJobRoutes(error: unknown): never {
  if (isApiError(error) && error.code === "timeout")
    throw new ApiError("timeout", `${error.message.replace(/[.;]?$/, ".")} ${JOB_ROUTES_NEXT}`, {
      headers: error.headers,
      cause: error.cause ?? error,
      field: error.field,
    });
  throw error;
}

/** An asynchronous job of a JSON body (`POST /api/ocr/jobs`, `Prefer: respond-async`, an MCP task). */
export async function submitJob(
  store: Store,
  input: ProcessDocumentInput,
): Promise<{ view: JobView; creditsRemaining: number }> {
  const outcome = await intake(store, {
    ...input,
    ...requestOf(validBody(input.body, input.file !== undefined), input.file),
    mode: "job",
  });
  if (outcome.kind !== "job") throw new Error("intake: a job was read now");
  return outcome;
}

/** The intake's view of a request: its document (the body's, or the file sent itself), options and webhook. */
export function requestOf(body: OcrRequest, file?: Uint8Array): Pick<IntakeInput, "source" | "options" | "webhookUrl"> {
  const source: DocumentSource =
    file !== undefined ? { kind: "bytes", bytes: file, field: "file" } : sourceOfBody(body);
  return { source, options: body.options ?? {}, ...(body.webhook && { webhookUrl: body.webhook.url }) };
}

function validBody(raw: unknown, upload = false): OcrRequest {
  const parsed = (upload ? ocrUploadSchema : ocrRequestSchema).safeParse(raw);
  if (!parsed.success) throw toApiError(parsed.error);
  return parsed.data;
}

/** A `using` declaration that calls `release` when its block ends. */
function onDispose(release: () => void): Disposable {
  return { [Symbol.dispose]: release };
}

/** An `await using` declaration that awaits `close` when its block ends. */
function onAsyncDispose(close: () => Promise<unknown>): AsyncDisposable {
  return {
    [Symbol.asyncDispose]: async () => {
      await close();
    },
  };
}
