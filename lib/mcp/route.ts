import { ApiError, toApiError } from "@/lib/api/errors";
import type { Env } from "@/lib/env";
import type { SettingsOverrides } from "@/lib/settings";
import { preflight, withApiKey, withRequest, type ApiContext, type RouteHandler } from "@/lib/http";
import { MCP_PROGRESS_INTERVAL_MS, mcpConfig } from "./config";
import {
  ALLOW,
  KEY_OPTIONS,
  checkScopes,
  countBatchCalls,
  limitOfPost,
  reportCharges,
  withEditedHeaders,
  type ToolCallSettings,
} from "./requests";
import { asksForProgress, buildServer } from "./server";
import { rebindingRefusal } from "./rebinding";
import { createSseTransport, type SseTransportOptions } from "./sse";
import { serveStreamablePost } from "./streamable";
import { pollableTaskResult, resumedTaskResult, serveTaskResult, taskErrorAnswer } from "./task-stream";

/** Settings a route instance takes instead of the configuration's (`mcpConfig(env)`); tests shorten them. */
interface McpRouteOptions extends SseTransportOptions {
  /** Budget of one `tools/call` in ms (default: `mcpConfig(env).toolDeadlineMs`, 28 s capped by `REQUEST_DEADLINE_MS`). */
  toolDeadlineMs?: number;
  /** Interval of a tool call's progress notifications (default `MCP_PROGRESS_INTERVAL_MS`; tests shorten it). */
  progressIntervalMs?: number;
  /** How often a call waiting for a job looks at it, and a synchronous read for a cancel (default 1 s; tests shorten it). */
  jobPollMs?: number;
  /** Overrides of the modules' settings for this instance's requests (tests: a small read limit). */
  settings?: SettingsOverrides;
}

export interface McpRoute {
  GET: RouteHandler;
  POST: RouteHandler;
  OPTIONS: RouteHandler;
  HEAD: RouteHandler;
  PUT: RouteHandler;
  PATCH: RouteHandler;
  DELETE: RouteHandler;
}

/**
 * The handlers of `/api/mcp`. Each call builds an independent instance (the route module makes one; tests make two
 * to stand for two serverless instances that share only the Store).
 *
 * - `POST` without `sessionId`: Streamable HTTP, stateless, JSON answers (see `serveStreamablePost`) — or an event
 *   stream for a `tools/call` that asks for progress (see `postStateless`).
 * - `GET` with `Accept: text/event-stream`, and `POST ?sessionId=…`: the legacy HTTP+SSE transport (./sse/).
 *
 * All of them go through `withApiKey` as an OAuth protected resource (an access token or an API key; the `api_key`
 * query carrier allowed): rate limit and `Idempotency-Key` on POST exactly as REST; no credentials is `401` with the
 * challenge that starts a sign-in, a refused `x-api-key` is `403` (see `KEY_OPTIONS`).
 */
export function createMcpRoute(options: McpRouteOptions = {}): McpRoute {
  const sse = createSseTransport(options);
  // Per request (from the configuration parsed once per process), not here: the route module makes its route at import,
  // and `next build` imports it without the runtime's environment.
  const settings = (env: Env): ToolCallSettings => ({
    toolDeadlineMs: options.toolDeadlineMs ?? mcpConfig(env).toolDeadlineMs,
    progressIntervalMs: options.progressIntervalMs ?? MCP_PROGRESS_INTERVAL_MS,
    jobPollMs: options.jobPollMs,
  });

  // The `Idempotency-Key` of a legacy SSE session POST, which the transport handles itself (see `sessionPost`).
  const sessionKeys = new WeakMap<Request, string>();
  const handlePost = async (context: ApiContext) => {
    const sessionId = new URL(context.req.url).searchParams.get("sessionId");
    return sessionId === null
      ? postStateless(context, settings(context.env))
      : sse.post(context, sessionId, settings(context.env), sessionKeys.get(context.req));
  };
  const instance = { settings: options.settings };
  // Polling a task or paging through a job's text counts against the key's reads, as polling a job over REST does:
  // decided from the body once the key is authenticated (`limitOfPost`).
  const post = withApiKey(handlePost, { ...KEY_OPTIONS, limit: limitOfPost }).with(instance);
  /**
   * A legacy SSE session POST's `Idempotency-Key` is not `withApiKey`'s to replay: the POST's own answer is an empty
   * `202`, its messages go to a stream that a retry no longer has, and the SDK's retry of a call carries a new
   * JSON-RPC id. The transport keeps the key (./sse/transport.ts, `postToSession`).
   */
  const sessionPost = (req: Request): Request => {
    const key = req.headers.get("idempotency-key");
    if (key === null || !new URL(req.url).searchParams.has("sessionId")) return req;
    const stripped = withEditedHeaders(req, (headers) => headers.delete("idempotency-key"));
    sessionKeys.set(stripped, key);
    return stripped;
  };

  const notAllowed = withRequest(async ({ req }) => {
    throw new ApiError(
      "method_not_allowed",
      `${req.method.slice(0, 20)} is not allowed on /api/mcp; use POST (JSON-RPC) or GET (SSE)`,
      {
        headers: { Allow: ALLOW },
      },
    );
  });

  // A Streamable HTTP client reconnecting to a `tasks/result` it polls (./task-stream.ts): a read about a job.
  const resumeTaskResult = withApiKey(
    async ({ req, account, requestId, receivedAt, env, store, deliveries }) => {
      const state = resumedTaskResult(req)!;
      checkScopes({ account, req, env }, { jsonrpc: "2.0", method: "tasks/result" });
      const { toolDeadlineMs, jobPollMs } = settings(env);
      try {
        return await serveTaskResult(state, {
          store,
          env,
          deliveries,
          userId: account.userId,
          requestId,
          deadline: receivedAt + toolDeadlineMs,
          pollMs: jobPollMs,
          signal: req.signal,
        });
      } catch (error) {
        // The task is gone (expired, unknown): the client stops reconnecting after a few refusals.
        throw toApiError(error);
      }
    },
    { ...KEY_OPTIONS, limit: "reads", stream: true },
  ).with(instance);

  // A loopback-only server answers only loopback names (./rebinding.ts), before any key is looked at.
  const rebound = withRequest(async ({ req }) => {
    throw new ApiError("forbidden", rebindingRefusal(req) ?? "Refused");
  });

  return {
    GET: async (req) =>
      rebindingRefusal(req) ? rebound(req) : resumedTaskResult(req) !== null ? resumeTaskResult(req) : sse.GET(req),
    POST: async (req) => (rebindingRefusal(req) ? rebound(req) : post(sessionPost(req))),
    OPTIONS: preflight(["GET", "POST"]),
    HEAD: notAllowed,
    PUT: notAllowed,
    PATCH: notAllowed,
    DELETE: notAllowed,
  };
}

/**
 * A Streamable HTTP POST. Answered with JSON, except a `tools/call` that carries `_meta.progressToken` from a client
 * that accepts `text/event-stream`: that answer is an event stream, so the progress notifications reach the client
 * while the document is read (clients that reset their timeout on progress keep waiting). Its headers leave before
 * the work is done, so it carries no `x-credits-remaining` (the result's `creditsUsed` says what was charged). A POST
 * with an `Idempotency-Key` is always answered whole — its answer is stored for replays — so it gets no progress.
 */
async function postStateless(
  context: ApiContext,
  { toolDeadlineMs, progressIntervalMs, jobPollMs }: ToolCallSettings,
): Promise<Response> {
  const {
    req,
    body: requestBody,
    account,
    requestId,
    receivedAt,
    report,
    countRequests,
    env,
    settings,
    store,
  } = context;
  const { pool, workQueue, deliveries } = context;
  const body = await requestBody.json();
  checkScopes({ account, req, env }, body);
  await countBatchCalls(countRequests, body);
  const polled = pollableTaskResult(req, body);
  if (polled !== null) {
    try {
      return await serveTaskResult(polled, {
        store,
        env,
        deliveries,
        userId: account.userId,
        requestId,
        deadline: receivedAt + toolDeadlineMs,
        pollMs: jobPollMs,
        signal: req.signal,
      });
    } catch (error) {
      return taskErrorAnswer(error, polled.i, requestId);
    }
  }
  const accepts = (req.headers.get("accept") ?? "").toLowerCase().includes("text/event-stream");
  const stream = accepts && !req.headers.has("idempotency-key") && asksForProgress(body);
  const createServer = () =>
    buildServer(store, account, requestId, {
      env,
      settings,
      pool,
      workQueue,
      deliveries,
      receivedAt,
      deadline: receivedAt + toolDeadlineMs,
      serverHost: req.headers.get("host") ?? undefined,
      progressIntervalMs: stream ? progressIntervalMs : undefined,
      jobPollMs,
      ...reportCharges(report),
    });
  return serveStreamablePost(req, body, createServer, { stream });
}
