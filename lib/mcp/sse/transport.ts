import { ApiError } from "@/lib/api/errors";
import { claimIdempotencyKey, completeIdempotencyKey, fingerprintRequest, releaseIdempotencyKey } from "@/lib/credits";
import {
  idempotencyRefusal,
  isCredentialActive,
  isFinalOutcome,
  readApiKey,
  withApiKey,
  withRequest,
  type ApiContext,
  type RouteHandler,
} from "@/lib/http";
import type { Env } from "@/lib/env";
import type { ApiKeyIdentity } from "@/lib/keys";
import { authenticateAccessToken, isAccessToken, oauthUrls, serviceOrigin } from "@/lib/oauth";
import type { Store } from "@/lib/store";
import { mcpConfig, type SseTiming, type StreamCaps } from "../config";
import {
  ALLOW,
  KEY_OPTIONS,
  checkScopes,
  countBatchCalls,
  reportCharges,
  withEditedHeaders,
  type ToolCallSettings,
} from "../requests";
import { asksForProgress, buildServer } from "../server";
import { serveJsonExchange, serveStreamedExchange } from "../streamable";
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
  sessionMailboxId,
  sessionStreamEnd,
  type RelayedMessage,
} from "./relay";
import { StreamSlots } from "./stream-slots";

/** The protocol version of the legacy HTTP+SSE transport; `initialize` over it negotiates this one. */
export const SSE_PROTOCOL_VERSION = "2024-11-05";

/** Time left before the stream's end for the answer of a session POST to reach it. */
const DELIVERY_MARGIN_MS = 1_000;

export interface SseTransportOptions {
  /** Timing of the stream; unset fields come from the configuration. */
  sse?: Partial<SseTiming>;
  /** Caps on open streams; unset fields come from the configuration. */
  streams?: Partial<StreamCaps>;
}

/** The legacy HTTP+SSE transport (2024-11-05) of one route instance. */
export interface SseTransport {
  /** `GET /api/mcp`: a session's event stream, or `405` for a GET that is not for this transport (see `refuseGet`). */
  GET: RouteHandler;
  /** `POST /api/mcp?sessionId=…`, after `withApiKey`: a message for that session (see `postToSession`). */
  post(context: ApiContext, sessionId: string, settings: ToolCallSettings, idempotencyKey?: string): Promise<Response>;
}

/**
 * The legacy transport, which the SDK no longer serves: `GET` holds an event stream whose first event names the
 * session's endpoint; a `POST` there is processed at once and its answer relayed to the stream through the store
 * (the two may run on different instances; ./relay.ts). Each call makes an independent instance: its own wakeups
 * and its own count of open streams (the per-instance cap; the per-account one is counted in the store).
 */
export function createSseTransport(options: SseTransportOptions = {}): SseTransport {
  const wakeups = new StreamWakeups();
  const slots = new StreamSlots();

  const openStream = withApiKey(
    async ({ req, account, requestId, env, store }) => {
      const config = mcpConfig(env);
      const timing = { ...config.sse, ...options.sse };
      const hardEnd = Date.now() + timing.lifetimeMs;
      const sessionId = newSessionId(hardEnd);
      const mailboxId = sessionMailboxId(account.keyId, sessionId);
      // Before any byte of the stream: a stream over a cap is a plain 503 / 429, and so is a store outage; the session
      // exists before the client learns its endpoint.
      const accessTokenStands = accessTokenCheck(store, env, req, account);
      const slot = await slots.take(store, account.userId, sessionId, hardEnd, {
        ...config.streams,
        ...options.streams,
      });
      try {
        await openMailbox(store, mailboxId, SESSION_TTL_MS);
      } catch (error) {
        await slot.release();
        throw error;
      }
      const stream = createSseStream({
        store,
        mailboxId,
        hardEnd,
        endpoint: sessionEndpoint(req, sessionId),
        timing,
        wakeups,
        signal: req.signal,
        requestId,
        // A versioned GET that got here is the AI SDK's: its HTTP transport would hold the stream unused (see
        // `refuseGet`).
        closeIfUnused: protocolVersionOf(req) > SSE_PROTOCOL_VERSION,
        // The stream outlives the request that authenticated it: it stays only while its key (or OAuth grant and
        // access token) does.
        keepAlive: async () => {
          const [active, tokenStands] = await Promise.all([
            isCredentialActive(store, account),
            accessTokenStands(),
            slot.renew(),
          ]);
          return active && tokenStands;
        },
        onEnd: () => void slot.release(),
      });
      return new Response(stream, { headers: SSE_HEADERS });
    },
    { ...KEY_OPTIONS, stream: true },
  );

  return {
    GET: async (req) => {
      const refusal = refuseGet(req);
      // A refusal goes through `withRequest` (CORS, x-request-id, log line); the stream through `withApiKey` alone.
      if (refusal) {
        return withRequest(async () => {
          throw refusal;
        })(req);
      }
      return openStream(withoutIdempotencyKey(req));
    },
    post: (context, sessionId, settings, idempotencyKey) =>
      postToSession(context, sessionId, wakeups, settings, idempotencyKey),
  };
}

/**
 * A GET that is not for the legacy SSE transport gets `405` (no key needed, like any wrong method): one without
 * `Accept: text/event-stream`, one naming an `mcp-session-id`, and one from a Streamable HTTP client.
 *
 * A Streamable HTTP client sends `mcp-protocol-version` with the version it negotiated (2025-03-26 or later) on every
 * request, its GET for the optional standalone stream included: that GET is answered `405`, which the spec offers a
 * server with no standalone stream (Streamable HTTP, "Listening for Messages from the Server") and the SDKs take as
 * "none". Taking it for a legacy session (as before issue 39) opened a session every few seconds that the client
 * ignored, and its `retry:` hint of five minutes became the SDK's reconnection delay for everything, a
 * `tasks/result` stream's resume included: `getTaskResult` then waited five minutes for a job that had ended.
 * A legacy client sends no version on its first GET, and `2024-11-05` (what this transport negotiates) when its
 * EventSource reconnects.
 *
 * One exception: the Vercel AI SDK's SSE transport (`@ai-sdk/mcp` 1.x and 2.x) sends `mcp-protocol-version:
 * 2025-11-25` on its first GET, before any version is negotiated, so a versioned GET whose User-Agent names the AI
 * SDK opens the legacy stream. Its HTTP transport's GET (2025 handshake) has the same headers and gets one too, which
 * it ignores: such a stream closes after `SseTiming.unusedMs` when nothing is posted to its session (`closeIfUnused`).
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
  if (isStreamableHttpGet(req)) {
    return new ApiError(
      "method_not_allowed",
      "This server offers no standalone SSE stream over Streamable HTTP: POST JSON-RPC messages to /api/mcp. (The legacy SSE transport's GET sends no MCP-Protocol-Version header, or 2024-11-05.)",
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
 * For a stream opened with an OAuth access token: whether that token still stands (not revoked, not expired).
 * `isCredentialActive` checks the token's grant, which revoking the access token alone (`POST /oauth/revoke`, RFC
 * 7009) leaves in place: the stream went on after its token was revoked (issue 39). A key's stream needs no more.
 */
function accessTokenCheck(store: Store, env: Env, req: Request, account: ApiKeyIdentity): () => Promise<boolean> {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.get("authorization") ?? "")?.[1];
  // `withApiKey` took an access token only if no `x-api-key` came first: then the identity has the token's scopes.
  if (account.scopes === undefined || bearer === undefined || !isAccessToken(bearer)) return async () => true;
  const resource = oauthUrls(serviceOrigin(env, req)).resource;
  return async () => !("refused" in (await authenticateAccessToken(store, bearer, resource)));
}

/** A versioned GET past the legacy transport's version that does not come from the AI SDK (see `refuseGet`). */
function isStreamableHttpGet(req: Request): boolean {
  if (protocolVersionOf(req) <= SSE_PROTOCOL_VERSION) return false;
  return !/\bai-sdk\//i.test(req.headers.get("user-agent") ?? "");
}

function protocolVersionOf(req: Request): string {
  return req.headers.get("mcp-protocol-version")?.trim() ?? "";
}

/**
 * `Idempotency-Key` is for POSTs: on a GET the wrapper would wait for the end of the stream to store it. A stream
 * is not a replayable response, so the header is dropped there.
 */
function withoutIdempotencyKey(req: Request): Request {
  if (!req.headers.has("idempotency-key")) return req;
  return withEditedHeaders(req, (headers) => headers.delete("idempotency-key"));
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
 * A message for a legacy SSE session. It is processed before the `202` goes out: on serverless the instance may be
 * frozen once the response is sent, so work scheduled after it might never finish. The response is on the stream
 * by the time the client reads the 202 (the old transport allows either order). A `tools/call` that asks for
 * progress is served as an event stream read here: each progress notification is queued for the session's stream
 * as it comes, ahead of the result.
 */
async function postToSession(
  context: ApiContext,
  sessionId: string,
  wakeups: StreamWakeups,
  settings: ToolCallSettings,
  idempotencyKey?: string,
): Promise<Response> {
  const { body: requestBody, account, requestId, countRequests, store } = context;
  const body = await requestBody.json();
  checkScopes(context, body);
  await countBatchCalls(countRequests, body);
  const mailboxId = sessionMailboxId(account.keyId, sessionId);
  const streamEnd = sessionStreamEnd(sessionId);
  if (streamEnd === null || Date.now() >= streamEnd) throw unknownSession();
  if (idempotencyKey === undefined)
    return (await runOnSession(context, body, mailboxId, streamEnd, wakeups, settings)).response;

  // The key names the messages whatever JSON-RPC ids they carry: an SDK client's retry of a call has a new id.
  const fingerprint = fingerprintRequest(["POST", "/api/mcp (SSE session)", JSON.stringify(withoutIds(body))]);
  const claim = await claimIdempotencyKey(context.store, { userId: account.userId, key: idempotencyKey, fingerprint });
  switch (claim.status) {
    case "replay": {
      // The answer delivered before goes to this session's stream again, under this POST's ids; nothing runs.
      const token = await acceptSessionPost(store, mailboxId);
      if (token === null) throw unknownSession();
      const delivered = await completeSessionPost(
        store,
        mailboxId,
        token,
        withIds(storedMessages(claim.response.body), body),
      );
      wakeups.wake(mailboxId);
      if (!delivered) throw unknownSession();
      return new Response(null, { status: 202, headers: { "Idempotent-Replayed": "true" } });
    }
    case "in-progress":
    case "mismatch":
      throw idempotencyRefusal(claim.status);
    case "claimed":
      break;
  }
  let outcome: SessionOutcome | undefined;
  try {
    outcome = await runOnSession(context, body, mailboxId, streamEnd, wakeups, settings, idempotencyKey);
    return outcome.response;
  } finally {
    const key = { userId: account.userId, key: idempotencyKey, token: claim.token };
    const logFailure = (operation: string) => (error: unknown) =>
      console.error(
        `[${requestId}] idempotency ${operation} failed (${error instanceof Error ? error.name : "error"})`,
      );
    if (outcome?.final === true) {
      const stored = { status: 202, headers: {}, body: JSON.stringify(withIndexIds(outcome.messages, body)) };
      await completeIdempotencyKey(context.store, { ...key, response: stored }).catch(logFailure("complete"));
    } else {
      // Not delivered, failed, or a job still reading: a retry runs again (and finds the job, see `findCallJob`).
      await releaseIdempotencyKey(context.store, key).catch(logFailure("release"));
    }
  }
}

interface SessionOutcome {
  response: Response;
  /** Delivered, and an answer a retry should get again as it is (no failure of the moment, no job still reading). */
  final: boolean;
  /** The JSON-RPC responses delivered. */
  messages: RelayedMessage[];
}

/** How often a session POST makes sure its stream is still there while its calls run. */
const STREAM_CHECK_MS = 1_000;

async function runOnSession(
  context: ApiContext,
  body: unknown,
  mailboxId: string,
  streamEnd: number,
  wakeups: StreamWakeups,
  { toolDeadlineMs, progressIntervalMs, jobPollMs }: ToolCallSettings,
  idempotencyKey?: string,
): Promise<SessionOutcome> {
  const { req, account, requestId, receivedAt, report, env, settings, store } = context;
  const { pool, workQueue, deliveries } = context;
  const token = await acceptSessionPost(store, mailboxId);
  if (token === null) throw unknownSession();
  wakeups.wake(mailboxId);

  const streamed = asksForProgress(body);
  // Notifications are queued one after the other, and all of them before the responses.
  let notes = Promise.resolve();
  const relayNote = (message: RelayedMessage) => {
    notes = notes
      .then(() => queueSessionNotes(store, mailboxId, token, [message]))
      .then(() => wakeups.wake(mailboxId))
      .catch(() => undefined); // a lost progress notification does not fail the call
  };
  // The stream may close while the calls run (the client went away): checked every second with an empty note (which
  // the stream drops), and then the calls stop waiting for their jobs (see `JobCallContext.signal`).
  const gone = new AbortController();
  const watch = setInterval(
    () => {
      notes = notes
        .then(async () => {
          if (!gone.signal.aborted && !(await queueSessionNotes(store, mailboxId, token, []))) gone.abort();
        })
        .catch(() => undefined);
    },
    Math.min(STREAM_CHECK_MS, jobPollMs ?? STREAM_CHECK_MS),
  );
  let messages: RelayedMessage[] = [];
  let response: Response;
  let delivered: boolean | Error = false;
  let final = true;
  const jobs: string[] = [];
  // The jobs of the documents read in the calls (charged): an answer the stream cannot carry is still in its job.
  const read: string[] = [];
  const reported = reportCharges(report);
  try {
    const server = buildServer(store, account, requestId, {
      env,
      settings,
      pool,
      workQueue,
      deliveries,
      receivedAt,
      serverHost: req.headers.get("host") ?? undefined,
      // The stream must still be there to carry the answer: past this, a tool call stops with `timeout` (refunded).
      deadline: Math.min(receivedAt + toolDeadlineMs, streamEnd - DELIVERY_MARGIN_MS),
      protocolVersions: [SSE_PROTOCOL_VERSION],
      progressIntervalMs,
      onExtracted: (result) => {
        read.push(result.jobId);
        reported.onExtracted(result);
      },
      onToolError: (error) => {
        if (!isFinalOutcome(error.status)) final = false;
        reported.onToolError(error);
      },
      onJobSubmitted: reported.onJobSubmitted,
      onJob: (jobId) => {
        jobs.push(jobId);
        final = false;
      },
      idempotencyKey,
      signal: gone.signal,
      jobPollMs,
    });
    const sdkReq = withoutProtocolVersion(req);
    response = streamed
      ? await serveStreamedExchange(sdkReq, body, server)
      : await serveJsonExchange(sdkReq, body, server);
    if (response.status === 200) {
      messages = streamed ? await readStreamedExchange(response, relayNote) : parseResponses(await response.text());
    }
  } finally {
    clearInterval(watch);
    await notes;
    // Also after a failure: the stream must learn that this POST is over.
    delivered = gone.signal.aborted
      ? false
      : await completeSessionPost(store, mailboxId, token, messages).catch((error: unknown) => toError(error));
    wakeups.wake(mailboxId);
  }
  if (delivered instanceof Error) throw delivered;
  if (!delivered && messages.length > 0) {
    throw new ApiError("not_found", undeliveredMessage(jobs, read, idempotencyKey !== undefined));
  }
  // A malformed JSON-RPC message is answered here, as the SDK answers it (4xx with a JSON-RPC error).
  const answer = response.status !== 200 && response.status !== 202 ? response : accepted(response);
  // An internal error (`-32603`) is a failure of the moment, as a REST 5xx: not stored for replays.
  const failed = messages.some((message) => (message as { error?: { code?: unknown } }).error?.code === -32603);
  return { response: answer, final: final && !failed && answer.status === 202, messages };
}

function unknownSession(): ApiError {
  return new ApiError(
    "not_found",
    "Unknown or expired MCP session: open a new stream with GET /api/mcp (Accept: text/event-stream) and post to the endpoint it names",
  );
}

/**
 * The `404` of a POST whose answer its stream can no longer carry. A document read in the call was charged, and its
 * text is its job's (`get_extraction`); one the closed stream stopped was refunded. A job read in the background goes
 * on when the call had an `Idempotency-Key` (its retry gets it, charged once); without one it was cancelled when the
 * stream closed, the pages it had not read refunded (docs/mcp.md, "A lost answer"; docs/decisions.md#every-document-a-job).
 */
function undeliveredMessage(jobs: string[], read: string[], keyed: boolean): string {
  const charged = jobs.length > 0 || read.length > 0;
  const lead = `The session's stream closed before the response could be delivered${charged ? "" : " (nothing was charged)"}`;
  if (!charged) return `${lead}: open a new stream and send the request again`;
  const readNote =
    read.length === 0
      ? ""
      : `. Its document was read and charged as ${read.map((job) => `job ${job}`).join(", ")}: call get_extraction ` +
        `with {"job_id": "${read[0]}"} on a new stream for its text (free), instead of sending the request again`;
  if (jobs.length === 0) return `${lead}${readNote}`;
  const named = jobs.map((job) => `job ${job}`).join(", ");
  if (keyed) {
    return (
      `${lead}${readNote}. The document is being read as ${named} (each page charged once, as it is read): send the request again ` +
      `with the same Idempotency-Key on a new stream to get it, or call get_extraction with {"job_id": "${jobs[0]}"}`
    );
  }
  return (
    `${lead}${readNote}. Its document was being read as ${named}, cancelled when the stream closed (the pages not read were refunded; ` +
    `those read can be read with get_extraction {"job_id": "${jobs[0]}"}): open a new stream and send the request again, ` +
    "with an Idempotency-Key so that a retry finds the job instead of starting another"
  );
}

/** The messages of a JSON-RPC body without their `id`s (what an `Idempotency-Key` names: the same calls). */
function withoutIds(body: unknown): unknown {
  const strip = (message: unknown) => {
    if (typeof message !== "object" || message === null || Array.isArray(message)) return message;
    const { id: _id, ...rest } = message as Record<string, unknown>;
    return rest;
  };
  return Array.isArray(body) ? body.map(strip) : strip(body);
}

/** The `id`s of the requests of a JSON-RPC body, in order. */
function requestIds(body: unknown): unknown[] {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  return messages.flatMap((message) =>
    typeof message === "object" && message !== null && "method" in message && "id" in message
      ? [(message as { id: unknown }).id]
      : [],
  );
}

/** Responses with each `id` replaced by the place of its request in `body` (stored for a replay under other ids). */
function withIndexIds(messages: RelayedMessage[], body: unknown): RelayedMessage[] {
  const ids = requestIds(body);
  return messages.map((message) => ({ ...message, id: ids.findIndex((id) => id === message.id) }));
}

/** Stored responses with their places turned back into the `id`s of this POST's requests. */
function withIds(messages: RelayedMessage[], body: unknown): RelayedMessage[] {
  const ids = requestIds(body);
  return messages.map((message) => ({
    ...message,
    id: typeof message.id === "number" ? (ids[message.id] ?? null) : null,
  }));
}

function storedMessages(text: string): RelayedMessage[] {
  return parseResponses(text);
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
  return list.filter(
    (item): item is RelayedMessage => typeof item === "object" && item !== null && !Array.isArray(item),
  );
}
