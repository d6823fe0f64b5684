import {
  ProtocolError,
  ProtocolErrorCode,
  RELATED_TASK_META_KEY,
  type CallToolResult,
  type CreateTaskResult,
  type McpServer,
  type ProgressNotification,
  type ProgressToken,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import { ocrRequestSchema, type OcrRequestInput } from "@/lib/api/schemas";
import { describeError } from "@/lib/error-log";
import { toApiError, type ApiError } from "@/lib/api/errors";
import type { Env } from "@/lib/env";
import type { Settings } from "@/lib/settings";
import { afterResponse } from "@/lib/http";
import { submitJob } from "@/lib/intake";
import { cancelJob, getJobView, kickJobWorkers, listJobViews, type JobView } from "@/lib/jobs";
import type { Store } from "@/lib/store";
import { keepRecord, readRecord } from "./kept";
import { jobToolResult } from "./job-answers";
import { GET_EXTRACTION, describeJob, isJobActive, pagesSettled, toTask, waitForJob } from "./jobs";
import type { WorkQueue, Runtime } from "@/lib/jobs";
import type { DeliveryQueue } from "@/lib/webhooks";

/*
 * The MCP 2025-11-25 tasks over our jobs. `@modelcontextprotocol/server` 2.4 carries the tasks' wire schemas but no
 * task runtime (its TaskStore went with the experimental API), so the four requests are handled here, each one read
 * from and written to the job records (lib/jobs) — the task id is the job id, and any instance answers for any task.
 */

/** `capabilities.tasks` as `initialize` announces it: list, cancel, and task-augmented `tools/call`. */
export const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } } as const;

/** The `_meta` key of a `CreateTaskResult` whose text a host may hand the model at once (MCP 2025-11-25, Tasks). */
const IMMEDIATE_RESPONSE_META_KEY = "io.modelcontextprotocol/model-immediate-response";

/** Requests that only read about jobs: they count against the key's reads (`settings.keys.readsPerMinute`), as polling a job over REST does. */
const JOB_READ_METHODS: ReadonlySet<string> = new Set(["tasks/get", "tasks/result", "tasks/list"]);

const messageSchema = z.looseObject({
  method: z.string(),
  params: z.looseObject({ name: z.unknown().optional() }).optional(),
});

/**
 * True when every message of the JSON-RPC body (one, or a batch) reads about jobs: `tasks/get`, `tasks/result`,
 * `tasks/list`, or a `tools/call` of `get_extraction`. Anything else — a message that does work, a response, something
 * unreadable — makes the body count as a request.
 */
export function readsJobsOnly(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return (
    messages.length > 0 &&
    messages.every((message) => {
      const parsed = messageSchema.safeParse(message);
      if (!parsed.success) return false;
      const { method, params } = parsed.data;
      return JOB_READ_METHODS.has(method) || (method === "tools/call" && params?.name === GET_EXTRACTION);
    })
  );
}

/** Time kept at the end of a call's budget to read a finished job's text and answer. */
export const ANSWER_MARGIN_MS = 3_000;

/** Default of `JobCallContext.pollMs`: how often a waiting call looks at its job. */
export const JOB_POLL_MS = 1_000;

export interface JobCallContext {
  /** The store the call's records and its job live in (the request context's). */
  store: Store;
  /** The configuration (the request context's). */
  env: Env;
  /** The engine pool, the work queue and the delivery queue (the request context's). */
  pool: Runtime["pool"];
  workQueue: WorkQueue | null;
  deliveries: DeliveryQueue | null;
  /** The modules' settings (the request context's). */
  settings: Settings;
  account: { userId: string; keyId?: string };
  /** Keys the job's reservation and ledger entry (the submitting call's id). */
  requestId: string;
  /** Epoch ms the call must have answered by. */
  deadline: number;
  /** The request's `Host` (an `imageUrl` of this deployment's samples is read from disk). */
  serverHost?: string;
  /** How often a waiting call looks at its job (default {@link JOB_POLL_MS}), and a synchronous read for a cancel. */
  pollMs?: number;
  /** Called with the balance after a job's pages were reserved. */
  onSubmitted?: (creditsRemaining: number) => void;
  /**
   * The call's own key (the POST's `Idempotency-Key` and the call's place in its batch): the job it starts is kept
   * under it, so a retry with the same key finds that job instead of starting (and charging) another one.
   */
  callKey?: string;
  /** The most characters of text an answer holds (`extract_text`'s `max_chars`); unset: a whole result part. */
  maxChars?: number;
  /** Called with each job the call reads its document in (started, or found again by `callKey`). */
  onJob?: (jobId: string) => void;
  /**
   * Aborted when the caller is gone (MCP `notifications/cancelled`, the SSE session's stream closed): a call waiting
   * for its job stops, and the job is cancelled (its unread pages refunded) unless `callKey` lets a retry find it.
   */
  signal?: AbortSignal;
}

/**
 * Progress of one request, `notifications/progress` with its token: each notification's `progress` above the
 * previous one's (the spec's rule), whoever sends it — the elapsed-seconds timer of a synchronous read, then the pages
 * of a job. `flush()` waits for those handed to the transport, so none follows the request's answer.
 */
export class ProgressChannel {
  private last = Number.NEGATIVE_INFINITY;
  private readonly sent: Promise<void>[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly notify: (notification: ProgressNotification) => Promise<void>,
    private readonly token: ProgressToken,
  ) {}

  send(progress: number, message: string, total?: number): void {
    if (!(progress > this.last)) return;
    this.last = progress;
    const params = { progressToken: this.token, progress, message, ...(total !== undefined && { total }) };
    // A notification that cannot be delivered (the client went away) is no reason to stop the work.
    this.sent.push(this.notify({ method: "notifications/progress", params }).catch(() => undefined));
  }

  /** One notification per page the job settled since `before` (pages read or failed), in order. */
  pages(view: JobView, before: number): void {
    for (let settled = before + 1; settled <= pagesSettled(view); settled++) {
      this.send(settled, `Read ${settled} of ${view.pagesTotal} pages`, view.pagesTotal);
    }
  }

  /** Every `intervalMs` until `stopTimer()`: the seconds elapsed since now (the progress of a synchronous read). */
  startTimer(intervalMs: number): void {
    const started = Date.now();
    this.timer = setInterval(
      () => {
        const elapsedMs = Date.now() - started;
        this.send(elapsedMs / 1000, `Reading the document: ${Math.round(elapsedMs / 1000)} s so far`);
      },
      Math.max(10, intervalMs),
    );
  }

  stopTimer(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Stop the timer and wait for the notifications handed to the transport. */
  async flush(): Promise<void> {
    this.stopTimer();
    await Promise.all(this.sent);
  }
}

/** Submit the tool's document as a job (the intake, lib/intake: stored once, every page reserved, queued) and start its readers. */
export async function submitToolJob(body: OcrRequestInput, context: JobCallContext): Promise<JobView> {
  const parsed = ocrRequestSchema.safeParse(body);
  if (!parsed.success) throw toApiError(parsed.error);
  const { view, creditsRemaining } = await submitJob(context.store, {
    env: context.env,
    settings: context.settings,
    pool: context.pool,
    workQueue: context.workQueue,
    deliveries: context.deliveries,
    body: parsed.data,
    account: context.account,
    requestId: context.requestId,
    deadline: context.deadline,
    serverHost: context.serverHost,
  });
  return jobAccepted(view, creditsRemaining, context);
}

/**
 * A job the intake accepted for a call: the route hears of the balance, the call of its job, a keyed call's job is
 * kept for its retry, and readers are started after the answer.
 */
export async function jobAccepted(view: JobView, creditsRemaining: number, context: JobCallContext): Promise<JobView> {
  context.onSubmitted?.(creditsRemaining);
  context.onJob?.(view.jobId);
  if (context.callKey !== undefined) {
    // Kept as long as the job's results: a retry with the same key within that time gets this job.
    const ttlMs = Math.max(60_000, Date.parse(view.expiresAt) - Date.now());
    await keepRecord(context.store, CALL_JOB, context.account.userId, context.callKey, view.jobId, ttlMs).catch(
      (error: unknown) =>
        console.error(`[${context.requestId}] keeping the job of a keyed call failed:`, describeError(error)),
    );
  }
  afterResponse(() => kickJobWorkers(context.env, context.settings.jobs, view.pagesTotal));
  return view;
}

/** The kind of kept record (./kept.ts) that names the job of a keyed call. */
const CALL_JOB = "call-job";
/**
 * The job an earlier call with the same `callKey` started, if it is still there (the retry of a call whose answer
 * was lost): its view, or null. A job whose results expired (or that another account owns) is not found.
 */
export async function findCallJob(context: JobCallContext): Promise<JobView | null> {
  if (context.callKey === undefined) return null;
  const jobId = await readRecord(context.store, CALL_JOB, context.account.userId, context.callKey);
  if (jobId === null) return null;
  try {
    const view = await getJobView(context.store, context.env, context.deliveries, context.account.userId, jobId);
    context.onJob?.(view.jobId);
    return view;
  } catch {
    return null;
  }
}

/**
 * The answer to a task-augmented `tools/call`: the task (the job, just accepted). It also carries the
 * `CallToolResult` fields (`content` with the same text as the immediate response) because the SDK validates every
 * `tools/call` answer as a `CallToolResult`; a task-aware client reads `task`, and the extra field is allowed.
 */
export function createTaskResult(
  view: JobView,
  pool: Pick<Runtime["pool"], "estimate">,
): CreateTaskResult & CallToolResult {
  const text =
    `Reading the document as task ${view.jobId} (${view.pagesTotal} page${view.pagesTotal === 1 ? "" : "s"}, ` +
    `${view.creditsReserved} credit${view.creditsReserved === 1 ? "" : "s"} reserved, unread pages refunded). ` +
    "Its text comes with tasks/result once it completes.";
  return {
    task: toTask(view, pool),
    content: [{ type: "text", text }],
    _meta: { [IMMEDIATE_RESPONSE_META_KEY]: text },
  };
}

/**
 * Wait for a job within the call's budget, reporting each page read on `progress`, then answer: the text when it
 * ended in time, otherwise where it stands and the next step (`get_extraction`).
 */
export async function answerWithJob(
  view: JobView,
  context: JobCallContext,
  opening: string,
  progress?: ProgressChannel,
): Promise<CallToolResult> {
  let current = await waitForJob(context.account.userId, view.jobId, {
    store: context.store,
    env: context.env,
    deliveries: context.deliveries,
    until: context.deadline - ANSWER_MARGIN_MS,
    pollMs: context.pollMs ?? JOB_POLL_MS,
    onPages: (seen, before) => progress?.pages(seen, before),
    signal: context.signal,
  });
  if (context.signal?.aborted && isJobActive(current) && context.callKey === undefined) {
    // The caller is gone and nothing can find this job again: it stops, and what it did not read is refunded.
    current = await cancelJob(context.store, context.env, context, context.account.userId, current.jobId);
  }
  return jobToolResult(
    context.store,
    context.env,
    context.deliveries,
    context.account.userId,
    current,
    opening,
    context.maxChars,
  );
}

/** Task errors: an unknown, expired or malformed task id is `-32602` (the spec); anything else `-32603`. */
export function taskError(error: unknown, requestId: string): ProtocolError {
  if (error instanceof ProtocolError) return error;
  const apiError: ApiError = toApiError(error);
  if (apiError.code === "not_found" || apiError.code === "gone" || apiError.code === "invalid_request") {
    return new ProtocolError(ProtocolErrorCode.InvalidParams, `Failed to retrieve task: ${apiError.message}`);
  }
  if (apiError.code === "internal_error") {
    console.error(`[${requestId}] task request failed:`, describeError(apiError.cause ?? error));
    return new ProtocolError(ProtocolErrorCode.InternalError, `Internal error (request ${requestId})`);
  }
  return new ProtocolError(ProtocolErrorCode.InternalError, `${apiError.code}: ${apiError.message}`);
}

/** Params of `tasks/get`, `tasks/result`, `tasks/cancel` (`_meta.progressToken`: progress while `tasks/result` waits). */
const taskParamsSchema = z.looseObject({
  taskId: z.string().min(1).max(200),
  _meta: z.looseObject({ progressToken: z.union([z.string(), z.number()]).optional() }).optional(),
});
const listParamsSchema = z.looseObject({ cursor: z.string().max(100).optional() });

interface TaskHandlerOptions extends JobCallContext {
  /** Send progress on a `tasks/result` that carries a token (the answer can carry notifications). */
  progress: boolean;
}

/**
 * `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/list` on `server`, over the account's jobs.
 *
 * `tasks/result` blocks until the task ends, as the spec says — within this call's budget: a task still working at
 * its end is answered `-32603` with the advice to keep polling `tasks/get` (a serverless call cannot outlive its
 * budget). Meanwhile it sends `notifications/progress` per page when the request has a progress token.
 */
export function registerTaskHandlers(server: McpServer, options: TaskHandlerOptions): void {
  const { store, env, deliveries, pool, account, requestId } = options;
  const guarded = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw taskError(error, requestId);
    }
  };

  // The SDK types only the methods it serves; the tasks' requests are registered with their params schemas.
  server.server.setRequestHandler("tasks/get", { params: taskParamsSchema }, ({ taskId }) =>
    guarded(async () => toTask(await getJobView(store, env, deliveries, account.userId, taskId), pool)),
  );

  server.server.setRequestHandler("tasks/list", { params: listParamsSchema }, ({ cursor }) =>
    guarded(async () => {
      if (cursor !== undefined && !/^\d{1,20}$/.test(cursor)) {
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          "Invalid cursor: pass the nextCursor of a previous tasks/list unchanged",
        );
      }
      const page = await listJobViews(store, account.userId, { limit: 50, cursor: cursor ?? null });
      return {
        tasks: page.jobs.map((job) => toTask(job, pool)),
        ...(page.nextCursor !== null && { nextCursor: page.nextCursor }),
      };
    }),
  );

  server.server.setRequestHandler("tasks/cancel", { params: taskParamsSchema }, ({ taskId }) =>
    guarded(async () => {
      const before = await getJobView(store, env, deliveries, account.userId, taskId);
      if (!isJobActive(before)) {
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `Cannot cancel task ${taskId}: it is already ${toTask(before, pool).status}`,
        );
      }
      const after = await cancelJob(store, env, options, account.userId, taskId);
      if (after.status !== "cancelled") {
        // It ended on its own between the two reads.
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `Cannot cancel task ${taskId}: it is already ${toTask(after, pool).status}`,
        );
      }
      return toTask(after, pool);
    }),
  );

  server.server.setRequestHandler("tasks/result", { params: taskParamsSchema }, ({ taskId, _meta }, ctx) =>
    guarded(async () => {
      const token = _meta?.progressToken;
      const progress =
        options.progress && token !== undefined
          ? new ProgressChannel((notification) => ctx.mcpReq.notify(notification), token)
          : undefined;
      let view: JobView;
      try {
        view = await waitForJob(account.userId, taskId, {
          store,
          env,
          deliveries,
          until: options.deadline - ANSWER_MARGIN_MS,
          pollMs: options.pollMs ?? JOB_POLL_MS,
          onPages: (seen, before) => progress?.pages(seen, before),
          signal: ctx.mcpReq.signal,
        });
      } finally {
        await progress?.flush();
      }
      if (isJobActive(view)) {
        throw new ProtocolError(
          ProtocolErrorCode.InternalError,
          `Task ${taskId} is still working (${describeJob(view)}) at the end of this call's time: poll tasks/get and call tasks/result again once it is completed`,
        );
      }
      const result = await jobToolResult(store, env, deliveries, account.userId, view, "");
      return { ...result, _meta: { [RELATED_TASK_META_KEY]: { taskId } } };
    }),
  );
}
