import {
  WebStandardStreamableHTTPServerTransport,
  createMcpHandler,
  isLegacyRequest,
  type McpServer,
} from "@modelcontextprotocol/server";
import { z } from "zod";

interface StreamablePostOptions {
  /**
   * Answer 2025-era traffic as `text/event-stream` (see `serveStreamedExchange`) instead of JSON, so that the
   * progress notifications of a long `tools/call` reach the client before its result. Default false.
   */
  stream?: boolean;
}

/**
 * Streamable HTTP, stateless: one JSON-RPC exchange per POST (docs/mcp.md#behaviour-and-decisions).
 *
 * - 2025-era traffic (`initialize` with 2024-11-05 … 2025-11-25, `tools/list`, `tools/call`, notifications, batches)
 *   goes to the SDK's web-standard transport with `sessionIdGenerator: undefined`: one `application/json` answer in
 *   the same response (`enableJsonResponse`), or with `stream` the same exchange framed as an event stream; `202`
 *   for notifications only.
 * - Newer revisions (2026-07-28 and on: a per-request `_meta` envelope) go to the SDK's own `createMcpHandler`, which
 *   serves them however the SDK does (JSON, upgraded to an event stream when the server sends a notification first).
 *
 * The body was already read and parsed by the caller (our size, content-type and JSON checks; the idempotency
 * fingerprint reads the same bytes), so the SDK gets it as `parsedBody` on a body-less copy of the request.
 */
export async function serveStreamablePost(
  req: Request,
  body: unknown,
  createServer: () => McpServer,
  { stream = false }: StreamablePostOptions = {},
): Promise<Response> {
  const refused = refuseMalformedInitialize(body);
  if (refused) return refused;
  const forward = sdkRequest(req);
  if (await isLegacyRequest(forward, body)) {
    return stream ? serveStreamedExchange(req, body, createServer()) : serveJsonExchange(req, body, createServer());
  }
  const modern = createMcpHandler(() => createServer(), { legacy: "reject", onerror: reportSdkError });
  return modern.fetch(forward, { parsedBody: body });
}

/**
 * One JSON-RPC message (or batch) through a fresh server on the JSON transport. Resolves once every response is
 * ready (a `tools/call` runs to its end here), so nothing is left running after the HTTP response.
 */
export async function serveJsonExchange(req: Request, body: unknown, server: McpServer): Promise<Response> {
  // The legacy SSE transport comes here directly.
  const refused = refuseMalformedInitialize(body);
  if (refused) return refused;
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  transport.onerror = reportSdkError;
  await server.connect(transport);
  try {
    return await transport.handleRequest(sdkRequest(req), { parsedBody: withMinimalInitialize(body) });
  } finally {
    await server.close().catch(() => undefined);
  }
}

/**
 * One JSON-RPC message (or batch) through a fresh server on the transport's event-stream mode: a request is answered
 * `200 text/event-stream` at once, then each notification the server sends while working (progress) is an
 * `event: message`, then the responses, then the stream ends. The server is closed when the stream ends or when its
 * reader goes away. Errors found before any work (a malformed message) are answered as in JSON mode.
 */
export async function serveStreamedExchange(req: Request, body: unknown, server: McpServer): Promise<Response> {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  transport.onerror = reportSdkError;
  await server.connect(transport);
  const close = () => void server.close().catch(() => undefined);
  let response: Response;
  try {
    response = await transport.handleRequest(sdkRequest(req), { parsedBody: withMinimalInitialize(body) });
  } catch (error) {
    close();
    throw error;
  }
  const type = response.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (response.body === null || type !== "text/event-stream") {
    close();
    return response;
  }
  const headers = new Headers(response.headers);
  // A hop-by-hop header: not the route's to set (HTTP/2 forbids it).
  headers.delete("connection");
  return new Response(onStreamEnd(response.body, close), { status: response.status, headers });
}

/** `body`, calling `done` once when it has been read to its end, fails, or its reader cancels it. */
function onStreamEnd(body: ReadableStream<Uint8Array>, done: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    done();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = await reader.read();
        if (chunk.done) {
          end();
          controller.close();
        } else {
          controller.enqueue(chunk.value);
        }
      } catch (error) {
        end();
        controller.error(error);
      }
    },
    async cancel(reason) {
      end();
      await reader.cancel(reason).catch(() => undefined);
    },
  });
}

const initializeParamsSchema = z.object({
  protocolVersion: z.string({ error: 'protocolVersion must be a string such as "2025-11-25"' }).max(100),
  capabilities: z.record(z.string(), z.unknown(), { error: "capabilities must be an object" }).optional(),
  clientInfo: z
    .looseObject(
      {
        name: z.string({ error: "clientInfo.name must be a string" }),
        version: z.string({ error: "clientInfo.version must be a string" }),
      },
      { error: "clientInfo must be an object" },
    )
    .optional(),
});

/**
 * An `initialize` whose params are malformed (a numeric `protocolVersion`, a `clientInfo` without a name) is a
 * JSON-RPC `-32602` naming the field: the SDK would answer `-32603` with its validation dump, which reads as our bug.
 * Null for anything else (a batch is the SDK's to judge: `initialize` may not be in one).
 */
function refuseMalformedInitialize(body: unknown): Response | null {
  if (!isRecord(body) || body.method !== "initialize" || !("id" in body)) return null;
  const parsed = initializeParamsSchema.safeParse(body.params ?? {});
  if (parsed.success) return null;
  const id = typeof body.id === "string" || typeof body.id === "number" ? body.id : null;
  const reason = parsed.error.issues[0]?.message ?? "malformed params";
  return Response.json({
    jsonrpc: "2.0",
    id,
    error: { code: -32602, message: `Invalid params: initialize ${reason}` },
  });
}

/** What `initialize` reports as the client when it names none. */
const UNNAMED_CLIENT = { name: "unnamed-client", version: "0.0.0" } as const;

/**
 * An `initialize` may carry only `protocolVersion` and `capabilities` (the curl session of docs/mcp.md sends that);
 * the SDK also requires `clientInfo` and would answer -32603. A missing `clientInfo` (or `capabilities`) is filled
 * in; anything present is left for the SDK to judge (docs/mcp.md#behaviour-and-decisions, protocol versions).
 */
function withMinimalInitialize(body: unknown): unknown {
  const complete = (message: unknown): unknown => {
    if (!isRecord(message) || message.method !== "initialize" || !isRecord(message.params)) return message;
    const { params } = message;
    if (params.clientInfo !== undefined && params.capabilities !== undefined) return message;
    return { ...message, params: { capabilities: {}, clientInfo: UNNAMED_CLIENT, ...params } };
  };
  return Array.isArray(body) ? body.map(complete) : complete(body);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The request as the SDK transports want it. The SDK answers `406` unless `Accept` lists both `application/json`
 * and `text/event-stream`, even in JSON mode — but curl and plain HTTP clients send `Accept: application/json`,
 * `*∕*` or nothing, and the answer is JSON either way, so both are always listed. The content type was checked by
 * the caller (which also accepts a missing one, like the REST route) and is stated for the SDK's own check.
 */
function sdkRequest(req: Request): Request {
  const headers = new Headers(req.headers);
  headers.set("accept", "application/json, text/event-stream");
  headers.set("content-type", "application/json");
  headers.delete("content-length");
  return new Request(req.url, { method: req.method, headers, signal: req.signal });
}

function reportSdkError(error: Error): void {
  // The SDK reports rejected messages here too (they are answered as JSON-RPC errors); only log what is unexpected.
  if (error.name === "ZodError") return;
  if (
    /^(Parse error|Invalid Request|Not Acceptable|Unsupported Media Type|Bad Request|Rejected inbound request)/.test(
      error.message,
    )
  )
    return;
  console.warn(`[mcp] ${error.name}: ${error.message.slice(0, 300)}`);
}
