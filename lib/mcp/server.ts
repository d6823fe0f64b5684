import {
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolRequest,
  type CallToolResult,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import { ocrRequestSchema } from "@/lib/api/schemas";
import type { Env } from "@/lib/env";
import type { Settings } from "@/lib/settings";
import { describeError } from "@/lib/error-log";
import { toApiError, type ApiError } from "@/lib/api/errors";
import { intake, requestOf, type IntakeOutcome } from "@/lib/intake";
import type { ProcessAccount, ProcessDocumentResult } from "@/lib/intake";
import { fromEngineError } from "@/lib/jobs";
import { ScopeEnded } from "@/lib/request-scope";
import { configuredOrigin } from "@/lib/service-origin";
import type { Store } from "@/lib/store";
import { SERVICE_VERSION } from "@/lib/version";
import {
  DEFAULT_SLICE_CHARS,
  GET_EXTRACTION,
  extractTextOutputSchema,
  getExtractionInputSchema,
  getExtractionOutputSchema,
  waitForJob,
  type GetExtractionInput,
  type GetExtractionOutput,
} from "./jobs";
import { readExtractionSlice } from "./extraction-slices";
import {
  SHOW_EXTRACTION,
  SHOW_EXTRACTION_DESCRIPTION,
  VIEWER_PAGE,
  VIEWER_PAGE_DESCRIPTION,
  jobToShow,
  registerViewerResource,
  showExtraction,
  showExtractionInputSchema,
  showExtractionMeta,
  showExtractionOutputSchema,
  viewerPage,
  viewerPageInputSchema,
  viewerPageMeta,
  viewerPageOutputSchema,
  type ShowExtractionInput,
  type ViewerPageInput,
} from "./viewer/tools";
import type { JobView } from "@/lib/jobs";
import {
  ANSWER_MARGIN_MS,
  JOB_POLL_MS,
  TASKS_CAPABILITY,
  ProgressChannel,
  answerWithJob,
  createTaskResult,
  jobAccepted,
  findCallJob,
  registerTaskHandlers,
  submitToolJob,
  type JobCallContext,
} from "./tasks";
import { CANCEL_POLL_MS, cancelRunningCall, holdRunningCall, holdRunningRead, type RunningRead } from "./running-calls";
import { serveTools, servedTool } from "./tool-calls";
import { inToolTerms } from "./tool-terms";
import { answerWithin, extractionResult, toolErrorResult } from "./tool-answers";
import {
  GET_EXTRACTION_DESCRIPTION,
  TOOL_DESCRIPTION,
  TOOL_NAME,
  extractTextInputSchema,
  toOcrRequest,
  type ExtractTextInput,
} from "./tool-definitions";

/*
 * The MCP server of one HTTP request (`buildServer`): `initialize`'s capabilities, the two tools registered
 * (`extract_text`, `get_extraction`; what the model is told about them is ./tool-definitions.ts), and the flow of a
 * call — a keyed retry's earlier job, a task-augmented call, the intake that reads a document within the call or makes
 * it a job, the wait for a job's next page, progress notifications, a cancel from another POST. The results are
 * written by ./tool-answers.ts and ./job-answers.ts; the tasks requests are ./tasks.ts.
 */

/** `serverInfo` of `initialize`, with the service's one version (lib/version.ts). */
const SERVER_INFO = { name: "ocr-service", title: "OCR service", version: SERVICE_VERSION } as const;

/** A `tools/call` request that asks for progress notifications (MCP: `params._meta.progressToken`). */
const progressCallSchema = z.looseObject({
  method: z.enum(["tools/call", "tasks/result"]),
  id: z.union([z.string(), z.number()]),
  params: z.looseObject({ _meta: z.looseObject({ progressToken: z.union([z.string(), z.number()]) }) }),
});

/** True when the JSON-RPC message, or a message of the batch, is a `tools/call` that carries a progress token. */
export function asksForProgress(body: unknown): boolean {
  return (Array.isArray(body) ? body : [body]).some((message) => progressCallSchema.safeParse(message).success);
}

interface BuildServerOptions {
  /** The configuration the server works with (the request context's). */
  env: Env;
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
  /**
   * Leave each call's charge open (`ProcessDocumentResult.charge`) for the caller to settle once its answer is
   * delivered, or refund. Default false. The legacy SSE relay sets it: its answers travel on a stream that may close.
   */
  deferSettlement?: boolean;
  /** Called after each successful `extract_text` (the route reports `x-credits-remaining` and the pages charged). */
  onExtracted?: (result: ProcessDocumentResult) => void;
  /** Called for each `extract_text` that ends as an `isError` result. */
  onToolError?: (error: ApiError) => void;
  /**
   * How often a call that waits for a job looks at it, and a synchronous read at its cancel mailbox (default 1 s:
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

/**
 * A fresh MCP server for one HTTP request, on behalf of `account`: `capabilities.tools` only and the one tool,
 * `extract_text`, which runs `processDocument` — the REST use case, with its credits, limits and errors.
 *
 * Failures the model can act on (bad file, unsupported type, too large, no credits, fetch failed, timeout,
 * overloaded, store unavailable) are tool results with `isError: true` whose text starts with the error code.
 * Malformed calls are JSON-RPC errors: an unknown tool or arguments that violate the input schema → `-32602`
 * (docs/mcp.md#behaviour-and-decisions — the SDK would turn argument errors into tool results, so `tools/call` is
 * ours: `serveTools`); an unexpected failure → `-32603` with the request id, its details only in the log.
 *
 * `requestId` keys the credit reservation: a batch with several calls gets `requestId`, then `requestId.2`, ….
 */
export function buildServer(
  store: Store,
  account: ProcessAccount,
  requestId: string,
  options: BuildServerOptions,
): McpServer {
  const server = new McpServer(SERVER_INFO, {
    // `listChanged: false`: the tool list never changes, and a stateless server could not announce it anyway.
    // `tasks`: task-augmented `tools/call`, `tasks/list` and `tasks/cancel` (MCP 2025-11-25), over the jobs.
    // `resources`: the viewer's `ui://` resource (an MCP App, ./viewer).
    capabilities: { tools: { listChanged: false }, tasks: TASKS_CAPABILITY, resources: { listChanged: false } },
    supportedProtocolVersions: [...(options.protocolVersions ?? SUPPORTED_PROTOCOL_VERSIONS)],
  });

  const receivedAt = options.receivedAt ?? Date.now();
  const jobContext = (
    callId: string,
    call?: { index: number; signal?: AbortSignal; maxChars?: number },
  ): JobCallContext => {
    const signals = [options.signal, call?.signal].filter((signal): signal is AbortSignal => signal !== undefined);
    return {
      store,
      env: options.env,
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
  /** A failure of a call as the tool answers it: a tool error the model can act on, or `-32603` for a bug. */
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
  const extractText = async (
    input: ExtractTextInput,
    callId: string,
    context: JobCallContext,
    rpcId: string | number,
    progress?: ProgressChannel,
  ): Promise<CallToolResult> => {
    // The client's `notifications/cancelled` comes in another POST, maybe to another instance: while the document is
    // read here, the call is named in the store, and a cancel mark there aborts the read (./running-calls.ts).
    const running = holdRunningRead(
      store,
      options.env,
      account,
      context.deadline,
      rpcId,
      context.pollMs ?? CANCEL_POLL_MS,
    );
    try {
      return await readOrWait(input, callId, context, running, progress);
    } finally {
      await running.end();
    }
  };

  const readOrWait = async (
    input: ExtractTextInput,
    callId: string,
    context: JobCallContext,
    running: RunningRead,
    progress?: ProgressChannel,
  ): Promise<CallToolResult> => {
    // The intake reads it now when it fits this call, else makes it a job (by its expected work), waited for within
    // the call, page by page.
    const cancel = context.signal ? AbortSignal.any([context.signal, running.signal]) : running.signal;
    let outcome: IntakeOutcome;
    try {
      outcome = await intake(store, {
        ...requestOf(ocrRequestSchema.parse(toOcrRequest(input))),
        env: options.env,
        settings: options.settings,
        mode: "fit",
        account,
        requestId: callId,
        receivedAt: options.receivedAt,
        deadline: context.deadline,
        // The client cancelled (`notifications/cancelled`, noticed through the store; the SDK's request signal on a
        // transport that delivers it to the call) or went away: the read stops and its reserved pages are refunded.
        cancel,
        serverHost: options.serverHost,
        // A job's webhook links (the account's default receiver): the configured origin, never the request's Host.
        origin: configuredOrigin(options.env) ?? undefined,
        // Settled below, once it is known that the client still wants the answer.
        deferSettlement: true,
      });
    } catch (error) {
      return toolFailure(error, callId, TOOL_NAME);
    }
    if (outcome.kind === "job") {
      try {
        const view = await jobAccepted(outcome.view, outcome.creditsRemaining, context);
        // From here on a cancel cancels the job.
        await running.becameJob(view.jobId);
        // From here on the notifications count pages.
        progress?.stopTimer();
        return await answerWithJob(
          view,
          context,
          `This document is more than one call reads (${outcome.reason ?? "its work"}).`,
          progress,
        );
      } catch (error) {
        return toolFailure(error, callId, TOOL_NAME);
      }
    }
    let result = outcome.result;
    // A cancel that came after the read's last look (it ended between two): the client ignores the answer, so the
    // reserved pages go back, as for a read the cancel stopped.
    if (await running.finished()) {
      await result.charge?.refund();
      return toolFailure(fromEngineError(new ScopeEnded("cancelled")), callId, TOOL_NAME);
    }
    if (!options.deferSettlement && result.charge) {
      // No transport to wait for (Streamable HTTP): settled now.
      const { charge, ...settled } = result;
      result = { ...settled, creditsRemaining: await charge.settle() };
    }
    options.onExtracted?.(result);
    try {
      return await answerWithin(store, account.userId, result, input, options.settings.jobs);
    } catch (error) {
      // The text was read and charged: it is answered whole rather than lost.
      console.error(`[${callId}] keeping the rest of an answer failed:`, describeError(error));
      return { content: [{ type: "text", text: result.response.extractedText }], structuredContent: result.response };
    }
  };

  const callExtractText = async (
    input: ExtractTextInput,
    request: CallToolRequest,
    ctx: ServerContext,
  ): Promise<CallToolResult> => {
    const { callId, index } = nextCallId();
    const context = jobContext(callId, {
      index,
      signal: ctx.mcpReq.signal,
      maxChars: input.max_chars ?? DEFAULT_SLICE_CHARS,
    });
    return runExtractText(input, request, ctx, callId, context);
  };

  const runExtractText = async (
    input: ExtractTextInput,
    request: CallToolRequest,
    ctx: ServerContext,
    callId: string,
    context: JobCallContext,
  ): Promise<CallToolResult> => {
    // The retry of a call whose answer was lost (same Idempotency-Key): the job the first one started, not another.
    let earlier: JobView | null;
    try {
      earlier = await findCallJob(context);
    } catch (error) {
      return toolFailure(error, callId, TOOL_NAME);
    }
    if (request.params.task !== undefined) {
      // A task-augmented call (MCP 2025-11-25): the document becomes a job at once, whatever its length.
      try {
        return createTaskResult(earlier ?? (await submitToolJob(toOcrRequest(input), context)));
      } catch (error) {
        return toolFailure(error, callId, TOOL_NAME);
      }
    }
    const progress = progressFor(ctx, request.params._meta?.progressToken);
    try {
      if (earlier !== null) {
        progress?.stopTimer();
        // While the call waits for the job, the client's `notifications/cancelled` finds it (./running-calls.ts).
        const release = await holdRunningCall(store, account, context.deadline, ctx.mcpReq.id, earlier.jobId);
        try {
          return await answerWithJob(
            earlier,
            context,
            "This call was made before with the same Idempotency-Key.",
            progress,
          );
        } finally {
          await release();
        }
      }
      return await extractText(input, callId, context, ctx.mcpReq.id, progress);
    } catch (error) {
      return toolFailure(error, callId, TOOL_NAME);
    } finally {
      await progress?.flush();
    }
  };

  const callGetExtraction = async (
    input: GetExtractionInput,
    _request: CallToolRequest,
    ctx: ServerContext,
  ): Promise<CallToolResult> => {
    let slice: GetExtractionOutput;
    try {
      slice = await readExtractionSlice(store, options.env, account.userId, input);
      const { jobId } = slice;
      if (
        slice.text === "" &&
        slice.nextCursor !== null &&
        jobId !== null &&
        (slice.status === "queued" || slice.status === "running")
      ) {
        // Nothing ready at the cursor yet: wait (within the call's budget) for the job to settle another page, then
        // look again — so an agent polling a running job makes a call per page or so, not one every few seconds.
        const context = jobContext(requestId);
        const changed = new AbortController();
        const settledBefore = slice.pagesDone + slice.pagesFailed;
        await waitForJob(account.userId, jobId, {
          store,
          env: options.env,
          until: context.deadline - ANSWER_MARGIN_MS,
          pollMs: context.pollMs ?? JOB_POLL_MS,
          reportedBefore: settledBefore,
          onPages: () => changed.abort(),
          // Also when the client went away (the SSE session's stream closed).
          signal: AbortSignal.any([changed.signal, ctx.mcpReq.signal, ...(context.signal ? [context.signal] : [])]),
        });
        slice = await readExtractionSlice(store, options.env, account.userId, input);
      }
    } catch (error) {
      return toolFailure(error, requestId, GET_EXTRACTION);
    }
    return extractionResult(slice);
  };

  const callShowExtraction = async (
    input: ShowExtractionInput,
    _request: CallToolRequest,
    ctx: ServerContext,
  ): Promise<CallToolResult> => {
    const { callId, index } = nextCallId();
    try {
      if (input.image_source === undefined) {
        return await showExtraction(store, options.env, account.userId, jobToShow(input), input.page);
      }
      // A document to read and show: a job (charged as extract_text's), shown as its pages are read.
      const context = jobContext(callId, { index, signal: ctx.mcpReq.signal });
      const view = await submitToolJob(
        toOcrRequest({ image_source: input.image_source, pages: input.pages, output_format: "json" }),
        context,
      );
      return await showExtraction(
        store,
        options.env,
        account.userId,
        view.jobId,
        input.page,
        `Reading it as job ${view.jobId}.`,
      );
    } catch (error) {
      return toolFailure(error, callId, SHOW_EXTRACTION);
    }
  };

  const callViewerPage = async (
    input: ViewerPageInput,
    _request: CallToolRequest,
    ctx: ServerContext,
  ): Promise<CallToolResult> => {
    const { callId } = nextCallId();
    const context = jobContext(callId, { index: 0, signal: ctx.mcpReq.signal });
    try {
      return await viewerPage(store, options.env, account.userId, input, {
        deadline: context.deadline - ANSWER_MARGIN_MS,
        ...(context.signal && { signal: context.signal }),
      });
    } catch (error) {
      return toolFailure(error, callId, VIEWER_PAGE);
    }
  };

  registerViewerResource(server);
  serveTools(server, [
    servedTool({
      name: TOOL_NAME,
      title: "Extract text (OCR)",
      description: TOOL_DESCRIPTION,
      inputSchema: extractTextInputSchema,
      outputSchema: extractTextOutputSchema,
      annotations: {
        title: "Extract text (OCR)",
        readOnlyHint: true,
        destructiveHint: false,
        // Not idempotent: every call reads the file again and charges credits (REST's Idempotency-Key is the retry tool).
        idempotentHint: false,
        // URLs reach the open web.
        openWorldHint: true,
      },
      // The tool may be called as a task (MCP 2025-11-25, tool-level negotiation).
      execution: { taskSupport: "optional" },
      call: callExtractText,
    }),
    servedTool({
      name: GET_EXTRACTION,
      title: "Get extracted text (job)",
      description: GET_EXTRACTION_DESCRIPTION,
      inputSchema: getExtractionInputSchema,
      outputSchema: getExtractionOutputSchema,
      annotations: {
        title: "Get extracted text (job)",
        readOnlyHint: true,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
      call: callGetExtraction,
    }),
    servedTool({
      name: SHOW_EXTRACTION,
      title: "Show the document (viewer)",
      description: SHOW_EXTRACTION_DESCRIPTION,
      inputSchema: showExtractionInputSchema,
      outputSchema: showExtractionOutputSchema,
      _meta: showExtractionMeta,
      annotations: {
        title: "Show the document (viewer)",
        readOnlyHint: true,
        destructiveHint: false,
        // With image_source it reads (and charges) again.
        idempotentHint: false,
        openWorldHint: true,
      },
      call: callShowExtraction,
    }),
    servedTool({
      name: VIEWER_PAGE,
      title: "Viewer page",
      description: VIEWER_PAGE_DESCRIPTION,
      inputSchema: viewerPageInputSchema,
      outputSchema: viewerPageOutputSchema,
      _meta: viewerPageMeta,
      annotations: {
        title: "Viewer page",
        readOnlyHint: true,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
      call: callViewerPage,
    }),
  ]);

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

  registerTaskHandlers(server, { ...jobContext(requestId), progress: options.progressIntervalMs !== undefined });
  // The client gave up a request it sent in another POST (stateless: that request runs elsewhere, maybe on another
  // instance): the call is found through the store — a call waiting for its job has the job cancelled, a synchronous
  // read gets a cancel mark it notices within a poll (./running-calls.ts).
  server.server.setNotificationHandler("notifications/cancelled", async (notification) => {
    const rpcId = notification.params.requestId;
    if (rpcId === undefined) return;
    await cancelRunningCall(store, options.env, account, rpcId).catch((error: unknown) =>
      console.error(`[${requestId}] cancelling a call failed:`, describeError(error)),
    );
  });

  return server;
}
