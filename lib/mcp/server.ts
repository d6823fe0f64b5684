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
import { MAX_IMAGE_URL_LENGTH, ocrRequestSchema, outputFormatSchema, type OcrRequestInput } from "@/lib/api/schemas";
import { getEnv } from "@/lib/env";
import { errorCatalogue, type ErrorEntry } from "@/lib/api/error-catalogue";
import { describeError } from "@/lib/error-log";
import { toApiError, type ApiError } from "@/lib/api/errors";
import { intake, requestOf, type IntakeOutcome } from "@/lib/intake";
import { type ProcessAccount, type ProcessDocumentResult } from "@/lib/process";
import { configuredOrigin } from "@/lib/service-origin";
import { SERVICE_VERSION } from "@/lib/version";
import { toolInputSources } from "@/lib/vocabulary";
import {
  DEFAULT_SLICE_CHARS,
  GET_EXTRACTION,
  MAX_SLICE_CHARS,
  MIN_SLICE_CHARS,
  extractTextOutputSchema,
  getExtractionInputSchema,
  getExtractionOutputSchema,
  waitForJob,
  type ExtractTextOutput,
  type GetExtractionInput,
  type GetExtractionOutput,
} from "./jobs";
import { keepAnswerText, readExtractionSlice } from "./extraction-slices";
import { jobSettings } from "@/lib/jobs";
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

/** `serverInfo` of `initialize`, with the service's one version (lib/version.ts). */
const SERVER_INFO = { name: "ocr-service", title: "OCR service", version: SERVICE_VERSION } as const;

const TOOL_NAME = "extract_text";

/*
 * The tool's input (docs/mcp.md, the tools), described field by field for
 * the model. Strict objects like the REST body: an unknown or misspelt field is a malformed call, not ignored.
 */
const imageSourceSchema = z
  .strictObject({
    type: z
      .enum(toolInputSources)
      .describe(
        "How `data` carries the file: `base64` for the file's bytes in base64, `url` for a link the service downloads.",
      ),
    data: z
      .string()
      .min(1)
      .describe(
        "When type is `base64`: the file as base64 (standard or URL-safe alphabet, whitespace ignored) or as a data URL " +
          "(`data:application/pdf;base64,…`), at most 20 MB decoded (4 MB on Vercel). When type is `url`: an http(s) URL of the file on a " +
          `public host (at most 25 MB, 3 redirects, 15 s; ${MAX_IMAGE_URL_LENGTH} characters). Prefer base64 under 1 MB and a URL above.`,
      ),
    filename: z
      .string()
      .max(255)
      .optional()
      .describe(
        "Optional file name such as `invoice.pdf` or `scan.png`. Only a hint: the file type is decided from the bytes " +
          "(PDF, JPEG, PNG, WebP or TIFF), never from the name.",
      ),
  })
  .describe("The document or image to read: PDF, JPEG, PNG, WebP or TIFF.");

const extractTextInputSchema = z.strictObject({
  image_source: imageSourceSchema,
  pages: z
    .string()
    .max(256)
    .optional()
    .describe(
      'PDF pages to read, 1-based: "1-5", "3,7-9", "10-" (to the end). Default: every page. Only those are charged. A scanned ' +
        "page takes about 2–6 s: a few pages per call answer at once; a longer selection is read as a job.",
    ),
  max_chars: z
    .number()
    .int()
    .min(MIN_SLICE_CHARS)
    .max(MAX_SLICE_CHARS)
    .optional()
    .describe(
      `Most characters of text in the answer (default ${DEFAULT_SLICE_CHARS}, at most ${MAX_SLICE_CHARS}). A longer text ` +
        `comes with a cursor: call ${GET_EXTRACTION} with it for the rest (free: the pages were charged once).`,
    ),
  output_format: outputFormatSchema
    .optional()
    .describe(
      "`text` (default), `markdown`, `json` (the OcrDocument), `hocr` (hOCR 1.2), `alto` (ALTO 4 XML), `tsv` " +
        "(Tesseract's TSV of words with boxes and confidences; boxes in pixels of the page as sent), or `pdf`: a " +
        "searchable PDF as base64 in `extractedText`, for files up to 3 MB (larger: the REST job route).",
    ),
});
type ExtractTextInput = z.infer<typeof extractTextInputSchema>;

const TOOL_DESCRIPTION =
  "Extract the text of a PDF, JPEG, PNG, WebP or TIFF file by OCR (PDF pages that carry a text layer are read directly). " +
  "Send the file as base64 or as a URL. The text comes back as plain text (default), Markdown (headings, paragraphs, " +
  "lists) or JSON (pages → blocks → lines → words, each with a 0–100 confidence and a bounding box normalized to the " +
  "page). Costs 1 credit per page read (an image is 1 page); the result reports creditsUsed, and nothing is charged " +
  'when it fails. `pages` reads only some pages of a PDF (e.g. "1-5"; only those are charged). ' +
  `An answer holds at most max_chars characters (default ${DEFAULT_SLICE_CHARS}): a longer text comes with a cursor ` +
  `(structuredContent.nextCursor, and the exact call in the answer's last line); call ${GET_EXTRACTION} with it for the ` +
  "rest, free. " +
  "Timing: an image or a scanned page takes about 2–6 s (a PDF page with a text layer far less), and a call must " +
  "finish in under 30 s (many MCP clients give up at 30 s). A document whose reading is not expected to fit the call " +
  "(by its pages' expected work, e.g. a scanned PDF of more than a few pages) is read as an asynchronous job instead: " +
  "the answer holds the text read so far, " +
  `names the job (structuredContent.job.jobId) and gives the exact ${GET_EXTRACTION} call that reads on, in slices, as ` +
  "its pages are read. Clients that support MCP tasks can also call this tool as a task (tasks/get, tasks/result, tasks/cancel).";

const GET_EXTRACTION_DESCRIPTION =
  "Continue an extract_text answer: pass its cursor alone to get the next slice of a text longer than its max_chars. " +
  "Or read the text of a document that extract_text is reading (or has read) as an asynchronous job: the job's status " +
  `and progress, and the next slice of its text of at most max_chars characters (default 20000, at most ${MAX_SLICE_CHARS}), ` +
  "in page order. Pass the nextCursor of an answer as cursor to continue; it is null once every page asked for was " +
  "delivered. While the job is still reading, an answer holds the pages read so far and a cursor to come back with. " +
  "Free: the pages were paid when the job read them.";

/** Map the tool's arguments onto the REST request body that `processDocument` takes. */
function toOcrRequest(input: ExtractTextInput): OcrRequestInput {
  const chosen = {
    ...(input.output_format && { format: input.output_format }),
    ...(input.pages !== undefined && { pages: input.pages }),
  };
  const options = Object.keys(chosen).length > 0 ? { options: chosen } : {};
  return input.image_source.type === "base64"
    ? { image: input.image_source.data, ...options }
    : { imageUrl: input.image_source.data, ...options };
}

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

/** A tool result for a failure the model can act on: the text starts with the catalogued error code (lib/api/error-catalogue.ts). */
function toolErrorResult(error: ApiError): CallToolResult {
  // What the model can do about it (lib/api/error-catalogue.ts): every failure an `extract_text` call can end with has one.
  const { hint }: ErrorEntry = errorCatalogue[error.code];
  const message = /[.!?]$/.test(error.message) ? error.message : `${error.message}.`;
  return {
    content: [{ type: "text", text: `${error.code}: ${message}${hint ? ` Hint: ${hint}` : ""}` }],
    isError: true,
  };
}

interface BuildServerOptions {
  /** Epoch ms when the HTTP request arrived (start of `processingTime` and of the deadline). Default: when the tool runs. */
  receivedAt?: number;
  /**
   * Epoch ms past which a tool call stops with `timeout` and nothing is charged. Default: `receivedAt +
   * REQUEST_DEADLINE_MS` (the routes pass the MCP tool budget, `MCP_TOOL_DEADLINE_MS`).
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
  /** The host the HTTP request came to (its `Host` header): a URL of this server's own samples is read from disk (lib/process/process.ts). */
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
export function buildServer(account: ProcessAccount, requestId: string, options: BuildServerOptions = {}): McpServer {
  const server = new McpServer(SERVER_INFO, {
    // `listChanged: false`: the tool list never changes, and a stateless server could not announce it anyway.
    // `tasks`: task-augmented `tools/call`, `tasks/list` and `tasks/cancel` (MCP 2025-11-25), over the jobs.
    capabilities: { tools: { listChanged: false }, tasks: TASKS_CAPABILITY },
    supportedProtocolVersions: [...(options.protocolVersions ?? SUPPORTED_PROTOCOL_VERSIONS)],
  });

  const receivedAt = options.receivedAt ?? Date.now();
  const jobContext = (
    callId: string,
    call?: { index: number; signal?: AbortSignal; maxChars?: number },
  ): JobCallContext => {
    const signals = [options.signal, call?.signal].filter((signal): signal is AbortSignal => signal !== undefined);
    return {
      account,
      requestId: callId,
      deadline: options.deadline ?? receivedAt + getEnv().REQUEST_DEADLINE_MS,
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
    const running = holdRunningRead(account, context.deadline, rpcId, context.pollMs ?? CANCEL_POLL_MS);
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
      outcome = await intake({
        ...requestOf(ocrRequestSchema.parse(toOcrRequest(input))),
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
        origin: configuredOrigin() ?? undefined,
        deferSettlement: options.deferSettlement,
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
    const result = outcome.result;
    options.onExtracted?.(result);
    try {
      return await answerWithin(result, input);
    } catch (error) {
      // The text was read and charged: it is answered whole rather than lost.
      console.error(`[${callId}] keeping the rest of an answer failed:`, describeError(error));
      return { content: [{ type: "text", text: result.response.extractedText }], structuredContent: result.response };
    }
  };

  /**
   * A synchronous answer within `max_chars`: a longer text is cut there, the whole of it kept (as long as a job's
   * results) and the answer carries the cursor `get_extraction` continues from. A searchable PDF (`pdf`, base64 of a
   * file) is answered whole.
   */
  const answerWithin = async (result: ProcessDocumentResult, input: ExtractTextInput): Promise<CallToolResult> => {
    const { response } = result;
    const maxChars = input.max_chars ?? DEFAULT_SLICE_CHARS;
    const format = input.output_format ?? "text";
    if (format === "pdf" || response.extractedText.length <= maxChars) {
      return { content: [{ type: "text", text: response.extractedText }], structuredContent: response };
    }
    const kept = {
      format,
      text: response.extractedText,
      pageCount: response.pageCount,
      creditsUsed: response.creditsUsed,
    };
    const nextCursor = await keepAnswerText(account.userId, kept, maxChars, jobSettings().resultTtlMs);
    const first = response.extractedText.slice(0, maxChars);
    const note =
      `[The text goes on: this answer holds its first ${maxChars} of ${response.extractedText.length} characters. Call ` +
      `${GET_EXTRACTION} with {"cursor": "${nextCursor}"} for the next ${maxChars} (free: the pages were charged once), ` +
      "and so on while the answer has a nextCursor.]";
    const structured: ExtractTextOutput = { ...response, extractedText: first, nextCursor };
    return {
      content: [
        { type: "text", text: first },
        { type: "text", text: note },
      ],
      structuredContent: structured,
    };
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
        const release = await holdRunningCall(account, context.deadline, ctx.mcpReq.id, earlier.jobId);
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
      slice = await readExtractionSlice(account.userId, input);
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
          until: context.deadline - ANSWER_MARGIN_MS,
          pollMs: context.pollMs ?? JOB_POLL_MS,
          reportedBefore: settledBefore,
          onPages: () => changed.abort(),
          // Also when the client went away (the SSE session's stream closed).
          signal: AbortSignal.any([changed.signal, ctx.mcpReq.signal, ...(context.signal ? [context.signal] : [])]),
        });
        slice = await readExtractionSlice(account.userId, input);
      }
    } catch (error) {
      return toolFailure(error, requestId, GET_EXTRACTION);
    }
    return extractionResult(slice);
  };

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
    await cancelRunningCall(account, rpcId).catch((error: unknown) =>
      console.error(`[${requestId}] cancelling a call failed:`, describeError(error)),
    );
  });

  return server;
}

/** A `get_extraction` answer: the slice's text, then a line on where the job (or the kept answer) stands and how to go on. */
function extractionResult(slice: GetExtractionOutput): CallToolResult {
  const content: CallToolResult["content"] = slice.text === "" ? [] : [{ type: "text", text: slice.text }];
  if (slice.jobId === null) {
    const next =
      slice.nextCursor !== null
        ? ` Continue with ${GET_EXTRACTION} {"cursor": "${slice.nextCursor}"}.`
        : " That is the end of the text.";
    content.push({
      type: "text",
      text: `[the rest of an answer: characters ${slice.offset}–${slice.offset + slice.text.length}.${next}]`,
    });
    return { content, structuredContent: slice };
  }
  const where =
    slice.pages === ""
      ? "no page of this selection is ready yet"
      : `pages ${slice.pages}${slice.offset > 0 ? ` from character ${slice.offset} of page ${slice.pages.split(/[-,]/)[0]}` : ""}`;
  const failed =
    slice.failedPages.length > 0
      ? ` Passed over (could not be read): ${slice.failedPages.map((page) => `${page.page} (${page.code})`).join(", ")}.`
      : "";
  const next =
    slice.nextCursor !== null
      ? ` Continue with ${GET_EXTRACTION} {"job_id": "${slice.jobId}", "cursor": "${slice.nextCursor}"}${slice.pages === "" ? " in a few seconds" : ""}.`
      : " Nothing more to read for this selection.";
  const status = `[job ${slice.jobId}: ${slice.status}, ${slice.pagesDone} of ${slice.pagesTotal} pages read${slice.pagesFailed > 0 ? `, ${slice.pagesFailed} failed` : ""}; this answer: ${where}.${failed}${next}]`;
  content.push({ type: "text", text: status });
  return { content, structuredContent: slice };
}
