import { randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { FetchLike, Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  ErrorCode,
  McpError,
  PingRequestSchema,
  ProgressTokenSchema,
  ResultSchema,
  type Implementation,
  type JSONRPCRequest,
  type Progress,
  type ServerCapabilities,
  type ServerNotification,
  type ServerResult,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { errorAnswerSchema } from "./api";
import type { Config } from "./config";
import { CliError, EXIT } from "./errors";
import { NetworkError, sendWithRetry } from "./http";

/** `auto`: Streamable HTTP, then the legacy HTTP+SSE transport if that fails (the fallback order of docs/mcp.md). */
export type TransportChoice = "auto" | "http" | "sse";
type TransportKind = "http" | "sse";

interface BridgeOptions {
  transport: TransportChoice;
  /** One line to stderr (stdout is the MCP channel). */
  log: (line: string) => void;
}

/** An HTTP answer from `/api/mcp` that is not a success, with what the service or the SDK said in it. */
class UpstreamHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The service's error code (`unauthorized`, `rate_limited`, …) when the body is the service's error shape. */
    readonly code?: string,
    /** A JSON-RPC error carried in a 4xx body (the SDK's answer to a malformed message). */
    readonly rpc?: { code: number; message: string; data?: unknown },
  ) {
    super(message);
    this.name = "UpstreamHttpError";
  }
}

const jsonRpcErrorSchema = z.looseObject({
  jsonrpc: z.literal("2.0"),
  error: z.looseObject({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }),
});

/**
 * `ocr mcp`: an MCP server on stdin/stdout that forwards every request to `{base}/api/mcp`, for hosts that only
 * launch stdio servers. It connects upstream first (Streamable HTTP, else SSE), then answers the host's
 * `initialize` itself with the upstream server's info, capabilities and instructions; every other request
 * (`tools/list`, `tools/call`, `ping`, …) goes upstream and its result or JSON-RPC error comes back unchanged.
 * Each HTTP request upstream has the configured timeout and retries, with one Idempotency-Key for all attempts,
 * so a retried `tools/call` is not charged twice — except a call the host asked progress for, which goes without
 * either over Streamable HTTP so that its progress notifications reach the host (`progressRelay`). Resolves when the host closes stdin.
 */
export async function runMcpBridge(config: Config, options: BridgeOptions): Promise<void> {
  const key = config.apiKey;
  if (!key) {
    throw new CliError(
      EXIT.auth,
      "no API key: set FETCH_MCP_SERVER_API_KEY (or OCR_API_KEY) in the MCP host's env for this server",
    );
  }
  const upstream = new Upstream(config, key, options);
  const first = await upstream.connect();
  options.log(
    `connected to ${upstream.endpoint} over ${first.kind === "http" ? "Streamable HTTP" : "SSE"} ` +
      `(${first.info.name} ${first.info.version})`,
  );

  const server = new Server(first.info, { capabilities: first.capabilities, instructions: first.instructions });
  type Extra = Parameters<NonNullable<Server["fallbackRequestHandler"]>>[1];
  const forward = (request: JSONRPCRequest, extra: Extra) =>
    upstream.forward(request, extra.signal, progressRelay(request, extra));
  server.fallbackRequestHandler = (request, extra) => forward(request, extra);
  // Answered upstream too, so a host's ping tells whether the service is reachable, not only this process.
  server.removeRequestHandler("ping");
  server.setRequestHandler(PingRequestSchema, (request, extra) =>
    forward({ jsonrpc: "2.0", id: 0, ...request }, extra),
  );
  server.onerror = (error) => options.log(`stdio: ${error.message}`);

  // The SDK's stdio transport does not notice the host closing stdin; without this the process would linger.
  const closed = new Promise<void>((resolve) => {
    process.stdin.once("end", resolve);
    process.stdin.once("close", resolve);
    server.onclose = resolve;
  });
  await server.connect(new StdioServerTransport());
  await closed;
  await server.close().catch(() => undefined);
  await upstream.close();
}

/** What the upstream request reports of its progress, for the host. */
type ProgressListener = (progress: Progress) => void;

/**
 * A host's request that carries `_meta.progressToken` wants `notifications/progress`: the upstream ones (the SDK
 * client gives the upstream request a token of its own) are sent on to the host under the host's token. Without
 * this the SDK client dropped them as "unknown token" and a host saw no progress (issue 39).
 */
function progressRelay(
  request: JSONRPCRequest,
  extra: { sendNotification: (notification: ServerNotification) => Promise<void> },
): ProgressListener | undefined {
  const token = ProgressTokenSchema.safeParse(request.params?._meta?.progressToken);
  if (!token.success) return undefined;
  return ({ progress, total, message }) =>
    void extra
      .sendNotification({
        method: "notifications/progress",
        params: {
          progressToken: token.data,
          progress,
          ...(total !== undefined && { total }),
          ...(message !== undefined && { message }),
        },
      })
      .catch(() => undefined);
}

interface Connection {
  kind: TransportKind;
  client: Client;
  info: Implementation;
  capabilities: ServerCapabilities;
  instructions?: string;
}

class Upstream {
  readonly endpoint: string;
  private current?: Promise<Connection>;
  /** What the last failed stream GET answered (EventSource reports only the status). */
  private lastStreamFailure?: string;

  constructor(
    private readonly config: Config,
    private readonly key: string,
    private readonly options: BridgeOptions,
  ) {
    this.endpoint = `${config.baseUrl}/api/mcp`;
  }

  /** The open connection, or a new one (after a failure reset it). */
  connect(): Promise<Connection> {
    this.current ??= this.open().catch((error: unknown) => {
      this.current = undefined;
      throw error;
    });
    return this.current;
  }

  async forward(request: JSONRPCRequest, signal: AbortSignal, onProgress?: ProgressListener): Promise<ServerResult> {
    const message = { method: request.method, ...(request.params !== undefined && { params: request.params }) };
    let connection = await this.connect().catch((error: unknown) => {
      throw toRpcError(error);
    });
    try {
      return await this.send(connection, message, signal, onProgress);
    } catch (error) {
      if (error instanceof McpError) throw withoutPrefix(error);
      // Any other failure is the connection's: the next request connects again.
      await this.reset(connection);
      // A legacy session that expired (its stream closed, `404`) never saw the message: send it on a new one.
      if (connection.kind === "sse" && error instanceof UpstreamHttpError && error.status === 404 && !signal.aborted) {
        connection = await this.connect().catch((retryError: unknown) => {
          throw toRpcError(retryError);
        });
        try {
          return await this.send(connection, message, signal, onProgress);
        } catch (retryError) {
          if (retryError instanceof McpError) throw withoutPrefix(retryError);
          await this.reset(connection);
          throw toRpcError(retryError);
        }
      }
      throw toRpcError(error);
    }
  }

  async close(): Promise<void> {
    const connection = await this.current?.catch(() => undefined);
    this.current = undefined;
    await connection?.client.close().catch(() => undefined);
  }

  private async send(
    connection: Connection,
    message: { method: string; params?: unknown },
    signal: AbortSignal,
    onProgress?: ProgressListener,
  ): Promise<ServerResult> {
    // The SDK's own timeout only backs up the per-attempt timeouts of the HTTP requests (and covers an answer that
    // never arrives on an SSE stream). A progress notification starts it again, as the host's own timeout would.
    const timeout = (this.config.retries + 2) * this.config.timeoutMs;
    const result = await connection.client.request(message as Parameters<Client["request"]>[0], ResultSchema, {
      signal,
      timeout,
      ...(onProgress !== undefined && { onprogress: onProgress, resetTimeoutOnProgress: true }),
    });
    return result as ServerResult;
  }

  private async reset(connection: Connection): Promise<void> {
    const current = await this.current?.catch(() => undefined);
    if (current === connection) this.current = undefined;
    await connection.client.close().catch(() => undefined);
  }

  private async open(): Promise<Connection> {
    const order: TransportKind[] = this.options.transport === "auto" ? ["http", "sse"] : [this.options.transport];
    const failures: string[] = [];
    let lastError: unknown;
    for (const kind of order) {
      try {
        return await this.openWith(kind);
      } catch (error) {
        lastError = error;
        failures.push(`${kind === "http" ? "Streamable HTTP" : "SSE"}: ${this.describe(error)}`);
        // A refused key is refused on every transport.
        if (isAuthFailure(error)) break;
        if (kind === "http" && order.length > 1)
          this.options.log(`Streamable HTTP failed (${this.describe(error)}); trying SSE`);
      }
    }
    throw new CliError(
      isAuthFailure(lastError) ? EXIT.auth : EXIT.other,
      `cannot connect to ${this.endpoint}: ${failures.join("; ")}`,
      { cause: lastError },
    );
  }

  private async openWith(kind: TransportKind): Promise<Connection> {
    const client = new Client({ name: "ocr-cli-bridge", version: this.config.userAgent.split(/[/ ]/)[1] ?? "0.0.0" });
    const url = new URL(this.endpoint);
    const fetch = this.fetchUpstream();
    const transport: Transport =
      kind === "http" ? new StreamableHTTPClientTransport(url, { fetch }) : new SSEClientTransport(url, { fetch });
    this.lastStreamFailure = undefined;
    try {
      await client.connect(transport, { timeout: (this.config.retries + 2) * this.config.timeoutMs });
    } catch (error) {
      // Also stops an EventSource that would otherwise keep reconnecting after a failed start.
      await client.close().catch(() => undefined);
      throw error;
    }
    // The SDK reports stream hiccups (an SSE stream that ends and reconnects) here; they are not failures.
    client.onerror = () => undefined;
    const info = client.getServerVersion() ?? { name: "ocr-service", version: "0.0.0" };
    const connection: Connection = {
      kind,
      client,
      info,
      capabilities: client.getServerCapabilities() ?? { tools: {} },
      instructions: client.getInstructions(),
    };
    client.onclose = () => {
      void this.current?.then(
        (current) => {
          if (current === connection) this.current = undefined;
        },
        () => undefined,
      );
    };
    return connection;
  }

  /**
   * The SDK transports' `fetch`: the key in `x-api-key`, the configured timeout and retries per request, and a
   * fresh Idempotency-Key per POST (the same on each of its attempts). A POST that ends in an error status throws
   * an {@link UpstreamHttpError} saying what the service answered.
   */
  private fetchUpstream(): FetchLike {
    return async (input, init) => {
      const method = (init?.method ?? "GET").toUpperCase();
      const headers = new Headers(init?.headers);
      headers.set("x-api-key", this.key);
      headers.set("user-agent", this.config.userAgent);
      const url = String(input);
      // A Streamable HTTP POST that asks for progress goes without an Idempotency-Key, or the service would answer it
      // whole, with no notification (docs/mcp.md, Long calls: progress); and so without retries, which could read it
      // twice. On an SSE session the notifications come on the stream whatever the POST carries.
      const streamed = method === "POST" && !new URL(url).searchParams.has("sessionId") && asksForProgress(init?.body);
      const response = await sendWithRetry(
        url,
        { ...init, headers },
        {
          timeoutMs: this.config.timeoutMs,
          retries: streamed ? 0 : this.config.retries,
          idempotencyKey: method === "POST" && !streamed ? randomUUID() : undefined,
          signal: init?.signal ?? undefined,
          onRetry: (info) =>
            this.options.log(
              `${method} ${new URL(url).pathname}: ${info.reason}; retrying in ${(info.delayMs / 1000).toFixed(1)} s`,
            ),
        },
      );
      if (!response.ok && (method === "POST" || response.status !== 405)) {
        const error = await toUpstreamError(response);
        if (method === "POST") throw error;
        this.lastStreamFailure = error.message;
      }
      return response;
    };
  }

  private describe(error: unknown): string {
    if (error instanceof UpstreamHttpError || error instanceof NetworkError || error instanceof CliError)
      return error.message;
    const status = (error as { code?: unknown } | null)?.code;
    if (typeof status === "number" && this.lastStreamFailure) return this.lastStreamFailure;
    return error instanceof Error ? error.message : String(error);
  }
}

/** Whether a POST body is a JSON-RPC request with `params._meta.progressToken` (the SDK client adds it for `onprogress`). */
function asksForProgress(body: unknown): boolean {
  if (typeof body !== "string") return false;
  try {
    return progressRequestSchema.safeParse(JSON.parse(body)).success;
  } catch {
    return false;
  }
}

const progressRequestSchema = z.looseObject({
  method: z.string(),
  params: z.looseObject({ _meta: z.looseObject({ progressToken: ProgressTokenSchema }) }),
});

async function toUpstreamError(response: Response): Promise<UpstreamHttpError> {
  const text = await response
    .clone()
    .text()
    .catch(() => "");
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const service = errorAnswerSchema.safeParse(json);
  if (service.success) {
    const { code, message } = service.data.error;
    return new UpstreamHttpError(response.status, `HTTP ${response.status} ${code}: ${message}`, code);
  }
  const rpc = jsonRpcErrorSchema.safeParse(json);
  if (rpc.success) {
    const { code, message, data } = rpc.data.error;
    return new UpstreamHttpError(response.status, `HTTP ${response.status}: ${message}`, undefined, {
      code,
      message,
      data,
    });
  }
  return new UpstreamHttpError(
    response.status,
    `HTTP ${response.status}${text ? `: ${text.replace(/\s+/g, " ").slice(0, 200)}` : ""}`,
  );
}

function isAuthFailure(error: unknown): boolean {
  if (error instanceof UpstreamHttpError) return error.status === 401 || error.status === 403;
  if (error instanceof CliError) return error.exitCode === EXIT.auth;
  // EventSource reports the status of a refused stream as `code`.
  const code = (error as { code?: unknown } | null)?.code;
  return code === 401 || code === 403;
}

/**
 * A JSON-RPC error for the host. The SDK sends `code`, `message` and `data` of what a handler throws; an McpError's
 * message carries a `MCP error <code>: ` prefix, so the upstream error is rebuilt as it was.
 */
class ForwardedError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "ForwardedError";
  }
}

function withoutPrefix(error: McpError): ForwardedError {
  return new ForwardedError(error.code, error.message.replace(/^MCP error -?\d+: /, ""), error.data);
}

/** What the host receives when the request could not be forwarded: a JSON-RPC error with the reason. */
function toRpcError(error: unknown): ForwardedError {
  if (error instanceof UpstreamHttpError && error.rpc)
    return new ForwardedError(error.rpc.code, error.rpc.message, error.rpc.data);
  if (error instanceof McpError) return withoutPrefix(error);
  const message = error instanceof Error ? error.message : String(error);
  return new ForwardedError(ErrorCode.InternalError, `The OCR service could not be reached: ${message}`);
}
