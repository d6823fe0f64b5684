import {
  Client as ClientV2,
  SSEClientTransport as SseV2,
  StreamableHTTPClientTransport as StreamableV2,
} from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport as SseV1 } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport as StreamableV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expect } from "vitest";
import { z } from "zod";
import { ocrResponseSchema, type OcrResponse } from "@/lib/api/schemas";
import type { McpRoute } from "@/lib/mcp";
import { reviewSchema } from "@/lib/mcp/review";
import { REQUEST_ID } from "../api/support";

/**
 * A key sent as `x-api-key` or `api_key` and refused on `/api/mcp`: `403` (where REST says `401`), no
 * `WWW-Authenticate` (MCP clients take a Bearer challenge for "sign in with OAuth", which cannot fix a key the client
 * keeps sending), and the error body with code `unauthorized`, exactly.
 */
export async function expectKeyRefused(response: Response, message?: RegExp): Promise<string> {
  expect(response.status).toBe(403);
  expect(response.headers.get("www-authenticate")).toBeNull();
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const requestId = response.headers.get("x-request-id");
  expect(requestId).toMatch(REQUEST_ID);
  const body = z
    .strictObject({
      success: z.literal(false),
      error: z.strictObject({ code: z.literal("unauthorized"), message: z.string().min(1) }),
      requestId: z.literal(requestId!),
    })
    .parse(await response.json());
  if (message) expect(body.error.message).toMatch(message);
  return body.error.message;
}

/**
 * A request refused on `/api/mcp` as an OAuth protected resource: `401`, the error body with code `unauthorized`, and
 * the challenge that leads MCP clients to sign in — `resource_metadata` and `scope`, plus `error="invalid_token"` and
 * its `error_description` (the body's message) when a Bearer value was presented and refused.
 */
export async function expectSignInChallenge(
  response: Response,
  message: RegExp,
  error?: "invalid_token",
): Promise<string> {
  expect(response.status).toBe(401);
  const challenge = response.headers.get("www-authenticate") ?? "";
  const origin = new URL(MCP_ENDPOINT).origin;
  expect(challenge).toMatch(
    new RegExp(
      `^Bearer resource_metadata="${origin}/\\.well-known/oauth-protected-resource/api/mcp", scope="documents:read jobs:manage"`,
    ),
  );
  const body = z
    .strictObject({
      success: z.literal(false),
      error: z.strictObject({ code: z.literal("unauthorized"), message: z.string().min(1) }),
      requestId: z.string(),
    })
    .parse(await response.json());
  expect(body.error.message).toMatch(message);
  if (error) {
    expect(challenge).toContain(`error="${error}"`);
    expect(challenge).toContain(`error_description="${body.error.message.replace(/"/g, " ")}"`);
  } else {
    expect(challenge).not.toContain("error=");
  }
  return body.error.message;
}

const TOOL_REQUEST_ID = new RegExp(`${REQUEST_ID.source.slice(0, -1)}(\\.\\d+)?$`);

export const MCP_ENDPOINT = "http://localhost:3000/api/mcp";

export type Handlers = Pick<McpRoute, "GET" | "POST">;

/** Every request the clients made through a {@link routeFetch}, for assertions on what went over the wire. */
export interface WireLog {
  requests: { method: string; url: string; status: number }[];
}

/**
 * A `fetch` for the SDK clients that calls our route handlers in process: `GET` to `streams` (the instance that
 * holds SSE streams), everything else to `posts` (the same instance by default; another one for cross-instance).
 */
export function routeFetch(posts: Handlers, streams: Handlers = posts, log?: WireLog) {
  return async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(url, init);
    const response = await (request.method === "GET" ? streams.GET(request) : posts.POST(request));
    log?.requests.push({ method: request.method, url: request.url, status: response.status });
    return response;
  };
}

export type Carrier = "x-api-key" | "bearer" | "query";

/** Where the client puts the key: the URL it connects to, and the headers it sends with every request. */
export function keyCarrier(key: string, carrier: Carrier = "x-api-key"): { url: URL; headers: Record<string, string> } {
  const url = new URL(MCP_ENDPOINT);
  if (carrier === "query") url.searchParams.set("api_key", key);
  const headers: Record<string, string> =
    carrier === "x-api-key" ? { "x-api-key": key } : carrier === "bearer" ? { authorization: `Bearer ${key}` } : {};
  return { url, headers };
}

export type ClientKind = "v1 streamable" | "v1 sse" | "v2 streamable" | "v2 streamable (2026-07-28)" | "v2 sse";
export const CLIENT_KINDS: ClientKind[] = [
  "v1 streamable",
  "v1 sse",
  "v2 streamable",
  "v2 streamable (2026-07-28)",
  "v2 sse",
];

/** The slice of the SDK clients (v1 and v2 alike) the tests use. */
export interface McpClient {
  listTools(): Promise<{ tools: ListedTool[] }>;
  callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<unknown>;
  getServerVersion(): unknown;
  getServerCapabilities(): unknown;
  close(): Promise<void>;
}

export interface ListedTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: unknown;
  outputSchema?: unknown;
  annotations?: unknown;
}

export interface ConnectOptions {
  kind: ClientKind;
  key: string;
  carrier?: Carrier;
  posts: Handlers;
  streams?: Handlers;
  log?: WireLog;
  /** Transport errors (an SSE stream that ends and reconnects reports one each time). */
  onTransportError?: (error: Error) => void;
}

/** Connect an official SDK client of `kind` to our handlers, in process. */
export async function connectClient(options: ConnectOptions): Promise<McpClient> {
  const { url, headers } = keyCarrier(options.key, options.carrier);
  const fetch = routeFetch(options.posts, options.streams, options.log);
  const requestInit = { headers };
  const info = { name: "ocr-tests", version: "1.0.0" };
  const onerror = (error: Error) => options.onTransportError?.(error);
  switch (options.kind) {
    case "v1 streamable": {
      const client = new ClientV1(info);
      const transport = new StreamableV1(url, { fetch, requestInit });
      transport.onerror = onerror;
      await client.connect(transport);
      return client;
    }
    case "v1 sse": {
      const client = new ClientV1(info);
      const transport = new SseV1(url, { fetch, requestInit });
      await client.connect(transport);
      transport.onerror = onerror;
      return client;
    }
    case "v2 streamable":
    case "v2 streamable (2026-07-28)": {
      const modern = options.kind === "v2 streamable (2026-07-28)";
      const client = new ClientV2(info, modern ? { versionNegotiation: { mode: "auto" } } : {});
      const transport = new StreamableV2(url, { fetch, requestInit });
      transport.onerror = onerror;
      await client.connect(transport);
      return client;
    }
    case "v2 sse": {
      const client = new ClientV2(info);
      const transport = new SseV2(url, { fetch, requestInit });
      await client.connect(transport);
      transport.onerror = onerror;
      return client;
    }
  }
}

/** One `notifications/progress` as the SDK clients hand it to `onprogress`. */
export interface ProgressReport {
  progress: number;
  total?: number;
  message?: string;
}

/**
 * `extract_text` with a progress callback (the client then sends `_meta.progressToken`) and `resetTimeoutOnProgress`:
 * the request `timeoutMs` counts from the last progress notification, as in clients that wait for long calls.
 */
export function callToolWithProgress(
  client: McpClient,
  args: Record<string, unknown>,
  onProgress: (report: ProgressReport) => void,
  timeoutMs: number,
): Promise<unknown> {
  const params = { name: "extract_text", arguments: args };
  const options = { onprogress: onProgress, resetTimeoutOnProgress: true, timeout: timeoutMs };
  if (client instanceof ClientV1) return client.callTool(params, undefined, options);
  if (client instanceof ClientV2) return client.callTool(params, options);
  throw new Error("not an SDK client");
}

/** A tool result as the SDK clients return it. */
export const toolResultSchema = z.looseObject({
  content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
  isError: z.boolean().optional(),
});
export type ToolResult = z.infer<typeof toolResultSchema>;

/**
 * A successful `extract_text` result: one text block equal to `extractedText`, and `structuredContent` that is
 * exactly a REST 200 body (the same zod schema, strict) — and, when words need a second look, `review` and a second
 * block that says so (issue 42).
 */
export function expectExtracted(result: unknown): OcrResponse {
  const parsed = toolResultSchema.parse(result);
  expect(parsed.isError ?? false, JSON.stringify(parsed.content).slice(0, 300)).toBe(false);
  const { review, ...body } = ocrResponseSchema
    .extend({ review: reviewSchema.optional() })
    .strict()
    .parse(parsed.structuredContent);
  expect(parsed.content).toEqual([
    { type: "text", text: body.extractedText },
    ...(review
      ? [
          {
            type: "text",
            text: expect.stringMatching(new RegExp(`^${review.spans} span\\(s\\) \\(${review.words} word`)),
          },
        ]
      : []),
  ]);
  // The HTTP request's id; the second and later calls of a batch get `.2`, `.3`, … (each keys its own reservation).
  expect(body.requestId).toMatch(TOOL_REQUEST_ID);
  return body;
}

/** A tool error the model can act on: `isError` and a text that starts with the catalogued code. */
export function expectToolError(result: unknown, code: string): string {
  const parsed = toolResultSchema.parse(result);
  expect(parsed.isError).toBe(true);
  expect(parsed.structuredContent).toBeUndefined();
  expect(parsed.content).toHaveLength(1);
  const text = parsed.content[0]!.text ?? "";
  expect(text.startsWith(`${code}: `), text).toBe(true);
  expect(text).toContain("Hint: ");
  return text;
}

export interface RpcOptions {
  key?: string | null;
  headers?: Record<string, string>;
  /** Query string to append (`?sessionId=…`). */
  query?: string;
  /** Send this instead of the JSON of the body. */
  raw?: string;
}

/** A JSON-RPC POST as curl would send it: `Content-Type: application/json`, `Accept: application/json`. */
export function rpcRequest(body: unknown, { key, headers = {}, query = "", raw }: RpcOptions = {}): Request {
  return new Request(`${MCP_ENDPOINT}${query}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json",
      ...(key ? { "x-api-key": key } : {}),
      ...headers,
    },
    body: raw ?? JSON.stringify(body),
  });
}

export const jsonRpcResultSchema = z.strictObject({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.string(), z.number()]),
  result: z.record(z.string(), z.unknown()),
});

export const jsonRpcErrorSchema = z.strictObject({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.string(), z.number(), z.null()]),
  error: z.looseObject({ code: z.number().int(), message: z.string() }),
});

/** One server-sent event as the stream frames it. */
export interface SseEvent {
  event?: string;
  data?: string;
  retry?: number;
  /** A comment line (`: ping`). */
  comment?: string;
}

/** Read a `text/event-stream` body event by event (comments included), for raw protocol assertions. */
export function readEvents(response: Response): {
  next(timeoutMs?: number): Promise<SseEvent | null>;
  cancel(): Promise<void>;
} {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const queue: SseEvent[] = [];
  let ended = false;

  const parseBlocks = () => {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end < 0) return;
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event: SseEvent = {};
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) event.comment = line.slice(1).trim();
        else {
          const colon = line.indexOf(":");
          const field = line.slice(0, colon);
          const value = line.slice(colon + 1).replace(/^ /, "");
          if (field === "event") event.event = value;
          else if (field === "data") event.data = event.data === undefined ? value : `${event.data}\n${value}`;
          else if (field === "retry") event.retry = Number(value);
        }
      }
      queue.push(event);
    }
  };

  return {
    async next(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (queue.length === 0 && !ended) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error("no SSE event within the timeout");
        let timer: NodeJS.Timeout | undefined;
        const chunk = await Promise.race([
          reader.read(),
          new Promise<"timeout">((resolve) => {
            timer = setTimeout(() => resolve("timeout"), left);
          }),
        ]);
        clearTimeout(timer);
        if (chunk === "timeout") throw new Error("no SSE event within the timeout");
        if (chunk.done) ended = true;
        else {
          buffer += chunk.value;
          parseBlocks();
        }
      }
      return queue.shift() ?? null;
    },
    async cancel() {
      await reader.cancel().catch(() => undefined);
    },
  };
}

/** The JSON-RPC message in an `event: message`. */
export function messageOf(event: SseEvent | null): unknown {
  expect(event?.event).toBe("message");
  return JSON.parse(event!.data!);
}

/** Poll `check` until it returns true (store state that changes asynchronously). */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
