import { McpServer, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server";
import { z } from "zod";
import { describeError } from "@/lib/error-log";
import type { ProcessAccount } from "@/lib/intake";
import type { Store } from "@/lib/store";
import { SERVICE_VERSION } from "@/lib/version";
import { registerViewerResource } from "./viewer/tools";
import { TASKS_CAPABILITY, registerTaskHandlers } from "./tasks";
import { cancelRunningCall } from "./running-calls";
import { serveTools } from "./tool-calls";
import { toolCalls, type BuildServerOptions } from "./tools/calls";
import { extractTextTool } from "./tools/extract-text";
import { getExtractionTool } from "./tools/get-extraction";
import { showExtractionTool } from "./tools/show-extraction";
import { viewerPageTool } from "./tools/viewer-page";

/*
 * The MCP server of one HTTP request (`buildServer`): `initialize`'s capabilities, its tools registered — one module
 * each in ./tools (`extract_text`, `get_extraction`, `show_extraction`, `read_viewer_page`; what the model is told about
 * them is ./tool-definitions.ts), the tasks requests (./tasks.ts) and a cancel from another POST. The results are
 * written by ./tool-answers.ts and ./job-answers.ts.
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

/**
 * A fresh MCP server for one HTTP request, on behalf of `account`: its tools (./tools, one module each, sharing the
 * request's `toolCalls`), tasks and the viewer's resource. `extract_text` takes documents in through the intake — the
 * REST use case, with its credits, limits and errors.
 *
 * Failures the model can act on (bad file, unsupported type, too large, no credits, fetch failed, timeout,
 * overloaded, store unavailable) are tool results with `isError: true` whose text starts with the error code.
 * Malformed calls are JSON-RPC errors: an unknown tool or arguments that violate the input schema → `-32602`
 * (docs/mcp.md#behaviour-and-decisions — the SDK would turn argument errors into tool results, so `tools/call` is
 * ours: `serveTools`); an unexpected failure → `-32603` with the request id, its details only in the log.
 *
 * `requestId` names each call's job and ledger entries: a batch with several calls gets `requestId`, then
 * `requestId.2`, ….
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

  const calls = toolCalls(store, account, requestId, options);
  registerViewerResource(server);
  serveTools(server, [
    extractTextTool(calls),
    getExtractionTool(calls),
    showExtractionTool(calls),
    viewerPageTool(calls),
  ]);

  registerTaskHandlers(server, { ...calls.jobContext(requestId), progress: options.progressIntervalMs !== undefined });
  // The client gave up a request it sent in another POST (stateless: that request runs elsewhere, maybe on another
  // instance): the call is found through the store — a call waiting for its job has the job cancelled, a synchronous
  // read gets a cancel mark it notices within a poll (./running-calls.ts).
  server.server.setNotificationHandler("notifications/cancelled", async (notification) => {
    const rpcId = notification.params.requestId;
    if (rpcId === undefined) return;
    await cancelRunningCall(store, options.env, options, account, rpcId).catch((error: unknown) =>
      console.error(`[${requestId}] cancelling a call failed:`, describeError(error)),
    );
  });

  return server;
}
