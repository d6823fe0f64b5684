import type { CallToolResult, ServerContext } from "@modelcontextprotocol/server";
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import type { Env } from "@/lib/env";
import type { Settings } from "@/lib/settings";
import { describeError } from "@/lib/error-log";
import { toApiError, type ApiError } from "@/lib/api/errors";
import type { ProcessAccount, ProcessDocumentResult } from "@/lib/intake";
import type { Store } from "@/lib/store";
import { ProgressChannel, type JobCallContext } from "../tasks";
import { inToolTerms } from "../tool-terms";
import { toolErrorResult } from "../tool-answers";
import type { WorkQueue, Runtime } from "@/lib/jobs";
import type { DeliveryQueue } from "@/lib/webhooks";

/*
 * What every tool of one request's server shares (../server.ts builds it once per HTTP request, each tool's module in
 * this folder takes it): the store and the account, a call's id and its job context, a failure in the tool's terms,
 * and the progress notifications of a call that asks for them.
 */

export interface BuildServerOptions {
  /** The configuration the server works with (the request context's). */
  env: Env;
  /** The engine pool, the work queue and the delivery queue (the request context's). */
  pool: Runtime["pool"];
  workQueue: WorkQueue | null;
  deliveries: DeliveryQueue | null;
  /** The modules' settings (the request context's). */
  settings: Settings;
  /** Epoch ms when the HTTP request arrived (start of `processingTime` and of the deadline). Default: when the tool runs. */
  receivedAt?: number;
  /**
   * Epoch ms past which a tool call stops with `timeout` and nothing is charged. Default: `receivedAt +
   * REQUEST_DEADLINE_MS` (the routes pass the MCP tool budget, `mcpConfig().toolDeadlineMs`).
   */
  deadline?: number;
  /**
   * Protocol versions `initialize` may negotiate. Default: every 2025-era version the SDK supports (2024-11-05 to
   * 2025-11-25). The legacy SSE relay passes `["2024-11-05"]`, the version of that transport.
   */
  protocolVersions?: readonly string[];
  /**
   * Send `notifications/progress` this often during an `extract_text` call that carries `_meta.progressToken`.
   * Unset: none. The routes set it when the answer can carry them (an event stream: the SSE session, or a Streamable
   * HTTP answer served as `text/event-stream`); a JSON answer has nowhere to put them.
   */
  progressIntervalMs?: number;
  /** The host the HTTP request came to (its `Host` header): a URL of this server's own samples is read from disk (lib/intake/source.ts). */
  serverHost?: string;
  /** Called after each successful `extract_text` (the route reports `x-credits-remaining` and the pages charged). */
  onExtracted?: (result: ProcessDocumentResult) => void;
  /** Called for each `extract_text` that ends as an `isError` result. */
  onToolError?: (error: ApiError) => void;
  /**
   * How often a call that waits for a job looks at it, and a read in the call at its job for a cancel (default 1 s:
   * `JOB_POLL_MS`, `CANCEL_POLL_MS`; tests shorten it).
   */
  jobPollMs?: number;
  /** Called with the balance after a job's pages were reserved (the route reports `x-credits-remaining`). */
  onJobSubmitted?: (creditsRemaining: number) => void;
  /**
   * The POST's `Idempotency-Key` (the legacy SSE transport, which handles the key itself): each `tools/call` of the
   * POST keeps the job it starts under the key and its place in the batch, and a retry with the same key reads that
   * job again instead of starting another (docs/mcp.md, "A lost answer").
   */
  idempotencyKey?: string;
  /** Called with each job a call reads its document in (the SSE relay names them when the answer cannot be delivered). */
  onJob?: (jobId: string) => void;
  /** Aborted when the client is gone (the SSE session's stream closed): calls stop waiting, see `JobCallContext.signal`. */
  signal?: AbortSignal;
}

/** The per-request services the tools are built with (`toolCalls`). */
export interface ToolCalls {
  store: Store;
  account: ProcessAccount;
  /** The HTTP request's id: the first call's; the later calls of a batch are `requestId.2`, `.3`, …. */
  requestId: string;
  options: BuildServerOptions;
  /** A call's context for the job it may read its document in (lib/mcp/tasks.ts). */
  jobContext(callId: string, call?: { index: number; signal?: AbortSignal; maxChars?: number }): JobCallContext;
  /** A failure of a call as the tool answers it: a tool error the model can act on, or `-32603` for a bug. */
  toolFailure(error: unknown, callId: string, tool: string): CallToolResult;
  /** The next call's id and its place in the batch. */
  nextCallId(): { callId: string; index: number };
  /** The progress channel of a call that carries `_meta.progressToken`, when the answer can carry notifications. */
  progressFor(ctx: ServerContext, token: string | number | undefined): ProgressChannel | undefined;
}

/** The services the tools of one request's server share. */
export function toolCalls(
  store: Store,
  account: ProcessAccount,
  requestId: string,
  options: BuildServerOptions,
): ToolCalls {
  const receivedAt = options.receivedAt ?? Date.now();
  const jobContext = (
    callId: string,
    call?: { index: number; signal?: AbortSignal; maxChars?: number },
  ): JobCallContext => {
    const signals = [options.signal, call?.signal].filter((signal): signal is AbortSignal => signal !== undefined);
    return {
      store,
      env: options.env,
      pool: options.pool,
      workQueue: options.workQueue,
      deliveries: options.deliveries,
      settings: options.settings,
      account,
      requestId: callId,
      deadline: options.deadline ?? receivedAt + options.env.REQUEST_DEADLINE_MS,
      ...(call?.maxChars !== undefined && { maxChars: call.maxChars }),
      serverHost: options.serverHost,
      pollMs: options.jobPollMs,
      onSubmitted: options.onJobSubmitted,
      onJob: options.onJob,
      ...(options.idempotencyKey !== undefined &&
        call !== undefined && { callKey: `${options.idempotencyKey}#${call.index}` }),
      ...(signals.length > 0 && { signal: signals.length === 1 ? signals[0] : AbortSignal.any(signals) }),
    };
  };
  const toolFailure = (error: unknown, callId: string, tool: string): CallToolResult => {
    // The messages of the REST use case name REST's fields: the model is told about its own arguments.
    const apiError = inToolTerms(toApiError(error));
    if (apiError.code === "internal_error") {
      console.error(`[${callId}] ${tool} failed:`, describeError(apiError.cause ?? error));
      throw new ProtocolError(ProtocolErrorCode.InternalError, `Internal error (request ${callId})`);
    }
    options.onToolError?.(apiError);
    return toolErrorResult(apiError);
  };

  let calls = 0;
  const nextCallId = () => {
    calls += 1;
    return { callId: calls === 1 ? requestId : `${requestId}.${calls}`, index: calls };
  };
  /**
   * The progress of a call that carries `_meta.progressToken`, when the answer can carry notifications: seconds
   * elapsed every `progressIntervalMs` while the document is read in the call, then pages once it is read as a job.
   */
  const progressFor = (ctx: ServerContext, token: string | number | undefined): ProgressChannel | undefined => {
    if (token === undefined || options.progressIntervalMs === undefined) return undefined;
    const channel = new ProgressChannel((notification) => ctx.mcpReq.notify(notification), token);
    channel.startTimer(options.progressIntervalMs);
    return channel;
  };

  return { store, account, requestId, options, jobContext, toolFailure, nextCallId, progressFor };
}
