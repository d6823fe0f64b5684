import {
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolResult,
  type ProgressNotification,
  type ProgressToken,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import { MAX_IMAGE_URL_LENGTH, ocrResponseSchema, outputFormatSchema, type OcrRequestInput } from "@/lib/api-schemas";
import { errorCatalogue, type ErrorEntry } from "@/lib/error-catalogue";
import { describeError } from "@/lib/error-log";
import { describeZodError, toApiError, type ApiError } from "@/lib/errors";
import { processDocument, type ProcessAccount, type ProcessDocumentResult } from "@/lib/process";
import { SERVICE_VERSION } from "@/lib/version";
import { inputSources } from "@/lib/vocabulary";

/** `serverInfo` of `initialize`, with the service's one version (lib/version.ts). */
const SERVER_INFO = { name: "ocr-service", title: "OCR service", version: SERVICE_VERSION } as const;

const TOOL_NAME = "extract_text";

/*
 * The tool's input, exactly the seed's (SEED-interface.md, MCP tool `extract_text`), described field by field for
 * the model. Strict objects like the REST body: an unknown or misspelt field is a malformed call, not ignored.
 */
const imageSourceSchema = z
  .strictObject({
    type: z
      .enum(inputSources)
      .describe("How `data` carries the file: `base64` for the file's bytes in base64, `url` for a link the service downloads."),
    data: z
      .string()
      .min(1)
      .describe(
        "When type is `base64`: the file as base64 (standard or URL-safe alphabet, whitespace ignored) or as a data URL " +
          "(`data:application/pdf;base64,…`), at most 3 MB decoded. When type is `url`: an http(s) URL of the file on a " +
          `public host (at most 25 MB, 3 redirects, 15 s; ${MAX_IMAGE_URL_LENGTH} characters). Prefer base64 under 1 MB and a URL above.`,
      ),
    filename: z
      .string()
      .max(255)
      .optional()
      .describe(
        "Optional file name such as `invoice.pdf` or `scan.png`. Only a hint: the file type is decided from the bytes " +
          "(PDF, JPEG, PNG or WebP), never from the name.",
      ),
  })
  .describe("The document or image to read: PDF, JPEG, PNG or WebP.");

const extractTextInputSchema = z.strictObject({
  image_source: imageSourceSchema,
  output_format: outputFormatSchema.optional(),
});
type ExtractTextInput = z.infer<typeof extractTextInputSchema>;

/** The result's `structuredContent`: the REST 200 body, field for field. */
const extractTextOutputSchema = ocrResponseSchema;

/** The output schema's JSON Schema: its root is an object, so the SDK passes `structuredContent` through unwrapped. */
const OUTPUT_JSON_SCHEMA: Record<string, unknown> = z.toJSONSchema(extractTextOutputSchema);

const TOOL_DESCRIPTION =
  "Extract the text of a PDF, JPEG, PNG or WebP file by OCR (PDF pages that carry a text layer are read directly). " +
  "Send the file as base64 or as a URL. The text comes back as plain text (default), Markdown (headings, paragraphs, " +
  "lists) or JSON (pages → blocks → lines → words, each with a 0–100 confidence and a bounding box normalized to the " +
  "page). Synchronous. Costs 1 credit per page read (an image is 1 page); the result reports creditsUsed, and " +
  "nothing is charged when it fails. " +
  "Timing: an image or a scanned page takes about 2–6 s (a PDF page with a text layer far less), and a call must " +
  "finish in under 30 s (many MCP clients give up at 30 s), so a scanned PDF of more than about 5 pages can end in " +
  "a timeout error. This tool reads the whole file and has no page-range argument: for a long scan, send a shorter " +
  "file (only the pages needed, split into several calls), or use the service's REST endpoint POST /api/ocr/process, " +
  "whose options.pages reads a page range.";

/** Map the tool's arguments onto the REST request body that `processDocument` takes. */
function toOcrRequest(input: ExtractTextInput): OcrRequestInput {
  const options = input.output_format ? { options: { format: input.output_format } } : {};
  return input.image_source.type === "base64"
    ? { image: input.image_source.data, ...options }
    : { imageUrl: input.image_source.data, ...options };
}

/** A `tools/call` request that asks for progress notifications (MCP: `params._meta.progressToken`). */
const progressCallSchema = z.looseObject({
  method: z.literal("tools/call"),
  id: z.union([z.string(), z.number()]),
  params: z.looseObject({ _meta: z.looseObject({ progressToken: z.union([z.string(), z.number()]) }) }),
});

/** True when the JSON-RPC message, or a message of the batch, is a `tools/call` that carries a progress token. */
export function asksForProgress(body: unknown): boolean {
  return (Array.isArray(body) ? body : [body]).some((message) => progressCallSchema.safeParse(message).success);
}

/** A tool result for a failure the model can act on: the text starts with the catalogued error code (lib/error-catalogue.ts). */
function toolErrorResult(error: ApiError): CallToolResult {
  // What the model can do about it (lib/error-catalogue.ts): every failure an `extract_text` call can end with has one.
  const { hint }: ErrorEntry = errorCatalogue[error.code];
  const message = /[.!?]$/.test(error.message) ? error.message : `${error.message}.`;
  return { content: [{ type: "text", text: `${error.code}: ${message}${hint ? ` Hint: ${hint}` : ""}` }], isError: true };
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
  /** Called after each successful `extract_text` (the route reports `x-credits-remaining` and the pages charged). */
  onExtracted?: (result: ProcessDocumentResult) => void;
  /** Called for each `extract_text` that ends as an `isError` result. */
  onToolError?: (error: ApiError) => void;
}

/**
 * A fresh MCP server for one HTTP request, on behalf of `account`: `capabilities.tools` only and the one tool,
 * `extract_text`, which runs `processDocument` — the REST use case, with its credits, limits and errors.
 *
 * Failures the model can act on (bad file, unsupported type, too large, no credits, fetch failed, timeout,
 * overloaded, store unavailable) are tool results with `isError: true` whose text starts with the error code.
 * Malformed calls are JSON-RPC errors: an unknown tool or arguments that violate the input schema → `-32602`
 * (docs/mcp.md#behaviour-and-decisions — the SDK would turn argument errors into tool results, so `tools/call` is ours); an unexpected
 * failure → `-32603` with the request id, its details only in the log.
 *
 * `requestId` keys the credit reservation: a batch with several calls gets `requestId`, then `requestId.2`, ….
 */
export function buildServer(account: ProcessAccount, requestId: string, options: BuildServerOptions = {}): McpServer {
  const server = new McpServer(SERVER_INFO, {
    // `listChanged: false`: the tool list never changes, and a stateless server could not announce it anyway.
    capabilities: { tools: { listChanged: false } },
    supportedProtocolVersions: [...(options.protocolVersions ?? SUPPORTED_PROTOCOL_VERSIONS)],
  });

  let calls = 0;
  const extractText = async (input: ExtractTextInput): Promise<CallToolResult> => {
    calls += 1;
    const callId = calls === 1 ? requestId : `${requestId}.${calls}`;
    let result: ProcessDocumentResult;
    try {
      result = await processDocument({
        body: toOcrRequest(input),
        account,
        requestId: callId,
        receivedAt: options.receivedAt,
        deadline: options.deadline,
      });
    } catch (error) {
      const apiError = toApiError(error);
      if (apiError.code === "internal_error") {
        console.error(`[${callId}] ${TOOL_NAME} failed:`, describeError(apiError.cause ?? error));
        throw new ProtocolError(ProtocolErrorCode.InternalError, `Internal error (request ${callId})`);
      }
      options.onToolError?.(apiError);
      return toolErrorResult(apiError);
    }
    options.onExtracted?.(result);
    return { content: [{ type: "text", text: result.response.extractedText }], structuredContent: result.response };
  };

  // Registered for `tools/list` (the schemas, converted by the SDK) …
  server.registerTool(
    TOOL_NAME,
    {
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
    },
    extractText,
  );

  // … and `tools/call` replaced, so that schema violations are JSON-RPC errors as docs/mcp.md says (the SDK's own handler
  // would answer them with `isError` results).
  server.server.removeRequestHandler("tools/call");
  server.server.setRequestHandler("tools/call", async (request, ctx) => {
    const { name, arguments: args } = request.params;
    if (name !== TOOL_NAME) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool ${JSON.stringify(name.slice(0, 100))}: this server has only ${TOOL_NAME}`);
    }
    const parsed = extractTextInputSchema.safeParse(args ?? {});
    if (!parsed.success) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid arguments for tool ${TOOL_NAME}: ${describeZodError(parsed.error)}`);
    }
    const progressToken = request.params._meta?.progressToken;
    const stopProgress =
      progressToken !== undefined && options.progressIntervalMs !== undefined
        ? reportProgress((notification) => ctx.mcpReq.notify(notification), progressToken, options.progressIntervalMs)
        : undefined;
    let result: CallToolResult;
    try {
      result = await extractText(parsed.data);
    } finally {
      await stopProgress?.();
    }
    return server.server.projectCallToolResult(result, OUTPUT_JSON_SCHEMA);
  });

  return server;
}

/**
 * `notifications/progress` for one call, every `intervalMs` until the returned `stop()`. The work has no total known
 * in advance (the page count is known only once the file is read), so `progress` is the seconds elapsed — it must
 * grow with every notification — and the message says the same for people. `stop()` waits for the notifications
 * already handed to the transport, so none can follow the call's result.
 */
function reportProgress(
  notify: (notification: ProgressNotification) => Promise<void>,
  progressToken: ProgressToken,
  intervalMs: number,
): () => Promise<void> {
  const started = Date.now();
  const sent: Promise<void>[] = [];
  const timer = setInterval(() => {
    const elapsedMs = Date.now() - started;
    const notification: ProgressNotification = {
      method: "notifications/progress",
      params: { progressToken, progress: elapsedMs / 1000, message: `Reading the document: ${Math.round(elapsedMs / 1000)} s so far` },
    };
    // A notification that cannot be delivered (the client went away) is no reason to stop the work.
    sent.push(notify(notification).catch(() => undefined));
  }, Math.max(10, intervalMs));
  return async () => {
    clearInterval(timer);
    await Promise.all(sent);
  };
}
