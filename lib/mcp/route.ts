import { ApiError } from "@/lib/api/errors";
import { isFinalOutcome, preflight, readApiKey, withApiKey, withRequest, type ApiContext, type RouteHandler } from "@/lib/http";
import { isApiKeyActive, rateLimitHeaders } from "@/lib/keys";
import type { OpenCharge, ProcessDocumentResult } from "@/lib/process";
import { MCP_PROGRESS_INTERVAL_MS, mcpConfig, type SseTiming, type StreamCaps } from "./config";
import {
  SESSION_TTL_MS,
  SSE_HEADERS,
  StreamWakeups,
  acceptSessionPost,
  completeSessionPost,
  createSseStream,
  newSessionId,
  openMailbox,
  queueSessionNotes,
  readStreamedExchange,
  sessionStreamEnd,
  sessionMailboxId,
  type RelayedMessage,
} from "./relay";
import { asksForProgress, buildServer } from "./server";
import { readsJobsOnly } from "./tasks";
import { StreamSlots } from "./stream-slots";
import { serveJsonExchange, serveStreamablePost, serveStreamedExchange } from "./streamable";

/** Settings a route instance takes instead of the configuration's (`mcpConfig()`); tests shorten them. */
interface McpRouteOptions {
  /** Timing of the legacy SSE stream; unset fields come from the configuration. */
  sse?: Partial<SseTiming>;
  /** Caps on open SSE streams; unset fields come from the configuration. */
  streams?: Partial<StreamCaps>;
  /** Budget of one `tools/call` in ms (default: `MCP_TOOL_DEADLINE_MS`, capped by `REQUEST_DEADLINE_MS`). */
  toolDeadlineMs?: number;
  /** Interval of a tool call's progress notifications (default `MCP_PROGRESS_INTERVAL_MS`; tests shorten it). */
  progressIntervalMs?: number;
  /** How often a call waiting for a job looks at it (default 1 s; tests shorten it). */
  jobPollMs?: number;
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

const METHODS = ["GET", "POST"] as const;
const ALLOW = "GET, POST, OPTIONS";

/** Time left before the stream's end for the answer of a session POST to reach it. */
const DELIVERY_MARGIN_MS = 1_000;

/** The protocol version of the legacy HTTP+SSE transport; `initialize` over it negotiates this one. */
const SSE_PROTOCOL_VERSION = "2024-11-05";

/**
 * The handlers of `/api/mcp`. Each call builds an independent instance (the route module makes one; tests make two
 * to stand for two serverless instances that share only the Store).
 *
 * - `POST` without `sessionId`: Streamable HTTP, stateless, JSON answers (see `serveStreamablePost`) — or an event
 *   stream for a `tools/call` that asks for progress (see `postStateless`).
 * - `GET` with `Accept: text/event-stream`: opens a legacy SSE session (see `createSseStream`).
 * - `POST ?sessionId=…`: a message for that session, processed here, its response queued for the stream, then `202`.
 *
 * All of them go through `withApiKey` with the `api_key` query carrier allowed: rate limit and `Idempotency-Key` on
 * POST exactly as REST, but a refused key is `403` where REST says `401` (see `KEY_OPTIONS`).
 */
export function createMcpRoute(options: McpRouteOptions = {}): McpRoute {
  const wakeups = new StreamWakeups();
  // This instance's open streams (the per-instance cap; the per-account one is counted in the store).
  const slots = new StreamSlots();
  const progressIntervalMs = options.progressIntervalMs ?? MCP_PROGRESS_INTERVAL_MS;
  // Per request (from the configuration parsed once per process), not here: the route module makes its route at import,
  // and `next build` imports it without the runtime's environment.
  const toolDeadlineMs = () => options.toolDeadlineMs ?? mcpConfig().toolDeadlineMs;

  const openStream = withApiKey(
    async ({ req, account, requestId }) => {
      const config = mcpConfig();
      const timing = { ...config.sse, ...options.sse };
      const hardEnd = Date.now() + timing.lifetimeMs;
      const sessionId = newSessionId(hardEnd);
      const mailboxId = sessionMailboxId(account.keyId, sessionId);
      // Before any byte of the stream: a stream over a cap is a plain 503 / 429, and so is a store outage; the session
      // exists before the client learns its endpoint.
      const slot = await slots.take(account.userId, sessionId, hardEnd, { ...config.streams, ...options.streams });
      try {
        await openMailbox(mailboxId, SESSION_TTL_MS);
      } catch (error) {
        await slot.release();
        throw error;
      }
      const stream = createSseStream({
        mailboxId,
        hardEnd,
        endpoint: sessionEndpoint(req, sessionId),
        timing,
        wakeups,
        signal: req.signal,
        requestId,
        // A versioned GET may be a Streamable HTTP client's optional standalone stream, which it would hold unused
        // (see `refuseGet`).
        closeIfUnused: (req.headers.get("mcp-protocol-version")?.trim() ?? "") > SSE_PROTOCOL_VERSION,
        // The stream outlives the request that authenticated it: it stays only while its key does.
        keepAlive: async () => {
          const [active] = await Promise.all([isApiKeyActive(account), slot.renew()]);
          return active;
        },
        onEnd: () => void slot.release(),
      });
      return new Response(stream, { headers: SSE_HEADERS });
    },
    { ...KEY_OPTIONS, stream: true },
  );

  const handlePost = async (context: ApiContext) => {
    const sessionId = new URL(context.req.url).searchParams.get("sessionId");
    return sessionId === null
      ? postStateless(context, toolDeadlineMs(), progressIntervalMs, options.jobPollMs)
      : postToSession(context, sessionId, wakeups, toolDeadlineMs(), progressIntervalMs, options.jobPollMs);
  };
  const postRequest = withApiKey(handlePost, KEY_OPTIONS);
  // Polling a task or paging through a job's text counts against the key's reads, as polling a job over REST does.
  const postRead = withApiKey(handlePost, { ...KEY_OPTIONS, limit: "reads" });
  const post: RouteHandler = async (req) => ((await peekReadsJobsOnly(req)) ? postRead(req) : postRequest(req));

  const get: RouteHandler = async (req) => {
    const refusal = refuseGet(req);
    // A refusal goes through `withRequest` (CORS, x-request-id, log line); the stream through `withApiKey` alone.
    if (refusal) {
      return withRequest(async () => {
        throw refusal;
      })(req);
    }
    return openStream(withoutIdempotencyKey(req));
  };

  const notAllowed = withRequest(async ({ req }) => {
    throw new ApiError("method_not_allowed", `${req.method.slice(0, 20)} is not allowed on /api/mcp; use POST (JSON-RPC) or GET (SSE)`, {
      headers: { Allow: ALLOW },
    });
  });

  return {
    GET: get,
    POST: post,
    OPTIONS: preflight(METHODS),
    HEAD: notAllowed,
    PUT: notAllowed,
    PATCH: notAllowed,
    DELETE: notAllowed,
  };
}

/** The most bytes of a POST body looked at to tell a read about jobs: those messages are small. */
const PEEK_BYTES = 16_384;

/**
 * Whether a POST only reads about jobs (`readsJobsOnly`), from a copy of its body, before the key's limit is counted.
 * Only a small body is looked at (a large one is counted as a request without being read here); the body itself is
 * read and checked by `withApiKey` as for any POST.
 */
async function peekReadsJobsOnly(req: Request): Promise<boolean> {
  const length = Number(req.headers.get("content-length") ?? "0");
  if (req.body === null || length > PEEK_BYTES) return false;
  const reader = req.clone().body!.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > PEEK_BYTES) return false;
      chunks.push(value);
    }
  } catch {
    return false;
  } finally {
    // Not awaited: cancelling one branch of a tee settles only once the other branch (the request's) is done too.
    void reader.cancel().catch(() => undefined);
  }
  try {
    return readsJobsOnly(JSON.parse(Buffer.concat(chunks).toString("utf8")));
  } catch {
    return false;
  }
}

/**
 * How `/api/mcp` checks keys: the `api_key` query is accepted (clients that can set no header), and a refused key is
 * `403` without `WWW-Authenticate`, not REST's `401` — MCP clients (mcp-remote, the MCP Inspector, SDK clients given
 * an auth provider) answer any `401` by starting an OAuth sign-in this service does not offer, and the user never
 * sees why the key was refused; on `403` they show the body's message. docs/mcp.md, Authentication errors.
 */
const KEY_OPTIONS = { acceptQueryKey: true, refuseKeyWith403: true } as const;

/**
 * A GET that is not for the legacy SSE transport gets `405` (no key needed, like any wrong method): one without
 * `Accept: text/event-stream`, or one naming an `mcp-session-id`.
 *
 * A GET with `Accept: text/event-stream` and no `mcp-session-id` opens the legacy stream, whatever
 * `mcp-protocol-version` it carries: the Vercel AI SDK's SSE transport (`@ai-sdk/mcp` 1.x and 2.x) sends
 * `2025-11-25` on its first GET. Only a GET naming a session (which this stateless server never hands out) is `405`.
 * The same headers come from an SDK's Streamable HTTP client asking for its optional standalone stream, and from the
 * AI SDK's HTTP transport: they get a stream too, which they ignore (its `endpoint` event is not a message to them).
 * So a stream opened by a versioned GET closes after `SseTiming.unusedMs` when nothing is posted to its session, and
 * its `retry:` hint is five minutes: an SDK client that reconnects its standalone stream comes back that rarely.
 */
function refuseGet(req: Request): ApiError | null {
  const accept = req.headers.get("accept")?.toLowerCase() ?? "";
  if (!accept.includes("text/event-stream")) {
    return new ApiError(
      "method_not_allowed",
      "GET /api/mcp opens the SSE transport and needs Accept: text/event-stream; send JSON-RPC messages with POST",
      { headers: { Allow: ALLOW } },
    );
  }
  if (req.headers.has("mcp-session-id")) {
    return new ApiError(
      "method_not_allowed",
      "This server is stateless over Streamable HTTP and keeps no sessions to stream; POST JSON-RPC messages instead",
      { headers: { Allow: ALLOW } },
    );
  }
  return null;
}

/**
 * `Idempotency-Key` is for POSTs: on a GET the wrapper would wait for the end of the stream to store it. A stream
 * is not a replayable response, so the header is dropped there.
 */
function withoutIdempotencyKey(req: Request): Request {
  if (!req.headers.has("idempotency-key")) return req;
  const headers = new Headers(req.headers);
  headers.delete("idempotency-key");
  return new Request(req, { headers });
}

/**
 * The `endpoint` event's URL. When the key came in the `api_key` query (clients that can set no header), the
 * endpoint carries it too, or the client's POSTs could not authenticate; clients with a header never see it there.
 */
function sessionEndpoint(req: Request, sessionId: string): string {
  const url = new URL(req.url);
  const query = new URLSearchParams({ sessionId });
  if (readApiKey(req.headers) === null) {
    const key = url.searchParams.get("api_key")?.trim();
    if (key) query.set("api_key", key);
  }
  return `${url.pathname}?${query.toString()}`;
}

/**
 * The tool calls' outcomes, reported to `withApiKey`: what they charged (`x-credits-remaining`, the log line) and
 * whether one failed in a way REST would not store for `Idempotency-Key` replays (402, 429, 5xx) — then the answer
 * is not `replayable`, so a retry with the same key runs again instead of replaying the failure.
 */
function reportCharges(report: ApiContext["report"]) {
  return {
    onExtracted: (result: ProcessDocumentResult) =>
      report({ pages: result.response.creditsUsed, creditsRemaining: result.creditsRemaining }),
    onToolError: (error: ApiError) => report({ replayable: isFinalOutcome(error.status) }),
    // A job's pages are reserved at once and charged as they are read (lib/jobs), wherever its answer goes.
    onJobSubmitted: (creditsRemaining: number) => report({ creditsRemaining }),
  };
}

/**
 * Each `tools/call` of a JSON-RPC batch counts against the key's rate limit, as a request of its own: the HTTP
 * request was counted once by `withApiKey`, so a batch of n calls takes n − 1 more (and its `RateLimit-Remaining`
 * says so). A batch that does not fit in what is left of the minute is refused whole (`429`, nothing run, nothing
 * charged, and none of what was left taken): running part of it would leave the client to sort out which calls
 * happened.
 */
async function countBatchCalls(countRequests: ApiContext["countRequests"], body: unknown): Promise<void> {
  const calls = (Array.isArray(body) ? body : [body]).filter(
    (message) => typeof message === "object" && message !== null && (message as { method?: unknown }).method === "tools/call",
  ).length;
  if (calls <= 1) return;
  const limit = await countRequests(calls - 1);
  if (limit.success) return;
  const headers = rateLimitHeaders(limit);
  throw new ApiError(
    "rate_limited",
    `Rate limit exceeded: this batch has ${calls} tools/call messages and each counts as a request; ${limit.remaining} of ${limit.limit} requests per minute per key are left. Retry in ${headers["Retry-After"] ?? "a few"} s, or send fewer calls per batch.`,
    { headers },
  );
}

/**
 * A Streamable HTTP POST. Answered with JSON, except a `tools/call` that carries `_meta.progressToken` from a client
 * that accepts `text/event-stream`: that answer is an event stream, so the progress notifications reach the client
 * while the document is read (clients that reset their timeout on progress keep waiting). Its headers leave before
 * the work is done, so it carries no `x-credits-remaining` (the result's `creditsUsed` says what was charged). A POST
 * with an `Idempotency-Key` is always answered whole — its answer is stored for replays — so it gets no progress.
 */
async function postStateless(
  { req, body: requestBody, account, requestId, receivedAt, report, countRequests }: ApiContext,
  toolDeadlineMs: number,
  progressIntervalMs: number,
  jobPollMs: number | undefined,
): Promise<Response> {
  const body = await requestBody.json();
  await countBatchCalls(countRequests, body);
  const deadline = receivedAt + toolDeadlineMs;
  const stream = acceptsEventStream(req) && !req.headers.has("idempotency-key") && asksForProgress(body);
  return serveStreamablePost(
    req,
    body,
    () =>
      buildServer(account, requestId, {
        receivedAt,
        deadline,
        serverHost: req.headers.get("host") ?? undefined,
        progressIntervalMs: stream ? progressIntervalMs : undefined,
        origin: new URL(req.url).origin,
        jobPollMs,
        ...reportCharges(report),
      }),
    { stream },
  );
}

function acceptsEventStream(req: Request): boolean {
  return (req.headers.get("accept") ?? "").toLowerCase().includes("text/event-stream");
}

/**
 * A message for a legacy SSE session. It is processed before the `202` goes out: on serverless the instance may be
 * frozen once the response is sent, so work scheduled after it might never finish. The response is on the stream
 * by the time the client reads the 202 (the old transport allows either order). A `tools/call` that asks for
 * progress is served as an event stream read here: each progress notification is queued for the session's stream
 * as it comes, ahead of the result.
 */
async function postToSession(
  { req, body: requestBody, account, requestId, receivedAt, report, countRequests }: ApiContext,
  sessionId: string,
  wakeups: StreamWakeups,
  toolDeadlineMs: number,
  progressIntervalMs: number,
  jobPollMs: number | undefined,
): Promise<Response> {
  const body = await requestBody.json();
  await countBatchCalls(countRequests, body);
  const mailboxId = sessionMailboxId(account.keyId, sessionId);
  const streamEnd = sessionStreamEnd(sessionId);
  const token = streamEnd !== null && Date.now() < streamEnd ? await acceptSessionPost(mailboxId) : null;
  if (streamEnd === null || token === null) {
    throw new ApiError(
      "not_found",
      "Unknown or expired MCP session: open a new stream with GET /api/mcp (Accept: text/event-stream) and post to the endpoint it names",
    );
  }
  wakeups.wake(mailboxId);

  const streamed = asksForProgress(body);
  // Notifications are queued one after the other, and all of them before the responses.
  let notes = Promise.resolve();
  const relayNote = (message: RelayedMessage) => {
    notes = notes
      .then(() => queueSessionNotes(mailboxId, token, [message]))
      .then(() => wakeups.wake(mailboxId))
      .catch(() => undefined); // a lost progress notification does not fail the call
  };
  let messages: RelayedMessage[] = [];
  let response: Response;
  let delivered: boolean | Error = false;
  // Each call's charge stays open until its answer is known to be on the stream (see `closeCharges`).
  const charges: OpenCharge[] = [];
  try {
    const server = buildServer(account, requestId, {
      receivedAt,
      serverHost: req.headers.get("host") ?? undefined,
      // The stream must still be there to carry the answer: past this, a tool call stops with `timeout` (refunded).
      deadline: Math.min(receivedAt + toolDeadlineMs, streamEnd - DELIVERY_MARGIN_MS),
      protocolVersions: [SSE_PROTOCOL_VERSION],
      progressIntervalMs,
      deferSettlement: true,
      onExtracted: (result) => {
        if (result.charge) charges.push(result.charge);
      },
      onToolError: reportCharges(report).onToolError,
      onJobSubmitted: reportCharges(report).onJobSubmitted,
      origin: new URL(req.url).origin,
      jobPollMs,
    });
    const sdkReq = withoutProtocolVersion(req);
    response = streamed ? await serveStreamedExchange(sdkReq, body, server) : await serveJsonExchange(sdkReq, body, server);
    if (response.status === 200) {
      messages = streamed ? await readStreamedExchange(response, relayNote) : parseResponses(await response.text());
    }
  } finally {
    await notes;
    // Also after a failure: the stream must learn that this POST is over.
    delivered = await completeSessionPost(mailboxId, token, messages).catch((error: unknown) => toError(error));
    wakeups.wake(mailboxId);
    await closeCharges(charges, delivered === true && messages.length > 0, report);
  }
  if (delivered instanceof Error) throw delivered;
  if (!delivered && messages.length > 0) {
    // Not stored for an `Idempotency-Key` (a 404 is a failure of the moment): the retry runs again, on the new stream.
    throw new ApiError(
      "not_found",
      `The session's stream closed before the response could be delivered${charges.length > 0 ? " (nothing was charged)" : ""}: open a new stream and send the request again`,
    );
  }
  // A malformed JSON-RPC message is answered here, as the SDK answers it (4xx with a JSON-RPC error).
  if (response.status !== 200 && response.status !== 202) return response;
  return accepted(response);
}

/**
 * The charges of a session POST's tool calls, once it is known whether their answers reached the session's stream:
 * kept (settled) when they did; refunded when they did not — the stream closed meanwhile (`404`), the store failed
 * (`503`) or the exchange broke — so a call is paid for only when its result is on its way to the client. Either way
 * the wrapper is told, for `x-credits-remaining` and the log line (`pages=…`, or `refunded=…`).
 */
async function closeCharges(charges: OpenCharge[], delivered: boolean, report: ApiContext["report"]): Promise<void> {
  for (const charge of charges) {
    if (delivered) {
      report({ pages: charge.pages, creditsRemaining: await charge.settle() });
    } else {
      await charge.refund();
      report({ refunded: charge.pages });
    }
  }
}

/** The session POST's own answer: `202`, no body (the messages went to the stream), the SDK's other headers kept. */
function accepted(response: Response): Response {
  const headers = new Headers(response.headers);
  headers.delete("content-type");
  return new Response(null, { status: 202, headers });
}

/**
 * The 2024-11-05 transport has no `mcp-protocol-version` header; clients that send one after negotiating a newer
 * version elsewhere are not refused for it.
 */
function withoutProtocolVersion(req: Request): Request {
  const headers = new Headers(req.headers);
  headers.delete("mcp-protocol-version");
  return new Request(req.url, { method: req.method, headers, signal: req.signal });
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function parseResponses(text: string): RelayedMessage[] {
  const parsed: unknown = JSON.parse(text);
  const list: unknown[] = Array.isArray(parsed) ? parsed : [parsed];
  return list.filter((item): item is RelayedMessage => typeof item === "object" && item !== null && !Array.isArray(item));
}
