import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  fingerprintRequest,
  maybeSweepReservations,
  releaseIdempotencyKey,
  type StoredResponse,
} from "@/lib/credits";
import type { Env } from "@/lib/env";
import type { Runtime } from "@/lib/jobs";
import { ApiError, isApiError } from "@/lib/api/errors";
import { addressLimitKey, clientAddress, clientAddressOptions } from "@/lib/client-ip";
import {
  actAs,
  checkRateLimit,
  checkReadRateLimit,
  isApiKeyActive,
  rateLimitHeaders,
  rateLimitSubject,
  resolveApiKeyFrom,
  type ApiKeyIdentity,
} from "@/lib/keys";
import {
  authenticateAccessToken,
  bearerChallenge,
  isAccessToken,
  isGrantActive,
  oauthUrls,
  serviceOrigin,
} from "@/lib/oauth";
import { runInScope, requestScope } from "@/lib/request-scope";
import type { Store } from "@/lib/store";
import type { Settings } from "@/lib/settings";
import { missingKeyMessage, readCredential, type CredentialCarrier } from "./api-key";
import { afterResponse } from "./after";
import { fingerprintParts, requestBody, type RequestBody } from "./body";
import type { ApiContext, Report } from "./context";
import { newRequestId } from "./request-id";
import { errorAnswer, finishResponse, withHeaders, type AnswerFacts } from "./respond";
import { requestContext, route, type Route, type RouteOptions } from "./routes";

type ApiHandler = (context: ApiContext) => Promise<Response>;

interface WithApiKeyOptions {
  /** Also accept the key as the `api_key` query parameter, after the headers. Default false: only `/api/mcp` may. */
  acceptQueryKey?: boolean;
  /** The answer is a long-lived stream: its store commands are not bounded by `REQUEST_DEADLINE_MS`. Default false. */
  stream?: boolean;
  /**
   * The route is an OAuth protected resource (`/api/mcp`, docs/mcp.md#authentication-errors). Default false (REST:
   * API keys only, `401` with a plain `Bearer` challenge). When true:
   * - an OAuth access token in `Authorization: Bearer` is accepted besides API keys, if it was issued for this
   *   resource; the account is charged as with a key (its `keyId` is the grant's id, its `scopes` the token's);
   * - no credentials → `401` with `WWW-Authenticate: Bearer resource_metadata="…", scope="…"`, the challenge MCP
   *   clients follow to sign in;
   * - a refused Bearer value (token or key) → `401` with `error="invalid_token"` and `error_description`;
   * - a refused key sent as `x-api-key` or `api_key` → `403`, no challenge: the client chose a key and keeps
   *   sending it, so a sign-in cannot help, and on `403` clients show the body's message.
   */
  protectedResource?: boolean;
  /**
   * Which per-key limit the route counts against: `requests` (default, `RATE_LIMIT_PER_MINUTE`) or `reads` (reads
   * about jobs, ten times as many: `settings.keys.readsPerMinute`; polling does not use up what a key may submit) —
   * or a function deciding it from the request and its body once the key is authenticated (MCP: a POST that only
   * reads about jobs), before the limit is counted.
   */
  limit?: RateLimitKind | ((req: Request, body: RequestBody) => Promise<RateLimitKind>);
}

type RateLimitKind = "requests" | "reads";

/** Response headers kept with an idempotent response and replayed with it (per-request ones are set fresh). */
const STORED_HEADERS = ["content-type", "x-credits-remaining", "location", "preference-applied"] as const;

/**
 * 4xx answers that depend on the moment rather than on the request: not stored, so a retry with the same
 * `Idempotency-Key` runs again (e.g. after the account got credits). Neither are 5xx answers. `404` is an MCP SSE
 * session that is gone (the only `not_found`): the retry goes to a new session, under the same key.
 */
const TRANSIENT_CLIENT_ERRORS = new Set([402, 404, 408, 409, 425, 429]);

/** Final outcomes, stored for replay: 2xx, and client errors that the same request would get again. */
export function isFinalOutcome(status: number): boolean {
  if (status >= 200 && status < 300) return true;
  return status >= 400 && status < 500 && !TRANSIENT_CLIENT_ERRORS.has(status);
}

/**
 * The wrapper of every keyed REST route:
 * request id → key (`x-api-key`, then `Authorization: Bearer`, then `api_key` if allowed; `401` with
 * `WWW-Authenticate`; `429` for a client address with too many unknown keys) → per-key rate limit
 * (`429`; `RateLimit-*` on every later response) → `Idempotency-Key` (replay, `409` while in progress, `422` for
 * another body) → handler → the one catch (`toErrorResponse`) → CORS, `x-request-id` and one log line.
 * Handlers throw; they never build an error response, and they set no credits header: they `report` (see
 * `ApiContext`), and the wrapper alone sets the headers, decides about replays and writes the log line.
 */
export function withApiKey(handler: ApiHandler, options: WithApiKeyOptions = {}): Route {
  return route((req, instance) => serve(handler, options, instance, req, Date.now()));
}

/** What the wrapper learns while serving one request: for its headers, the replay decision and the log line. */
interface Outcome extends AnswerFacts {
  pages: number;
  refunded: number;
  creditsRemaining: number | undefined;
  replayable: boolean;
}

async function serve(
  handler: ApiHandler,
  options: WithApiKeyOptions,
  instance: RouteOptions,
  req: Request,
  receivedAt: number,
): Promise<Response> {
  const requestId = newRequestId();
  const headers: Record<string, string> = {};
  const outcome: Outcome = { pages: 0, refunded: 0, creditsRemaining: undefined, replayable: true };
  let keyId: string | undefined;
  let response: Response;
  const credential = readCredential(req.headers, options.acceptQueryKey === true ? req.url : undefined);
  try {
    const given = requestContext(req, requestId, receivedAt, instance);
    const { env, store, settings } = given;
    // The request's one deadline, created here (lib/request-scope.ts): its signal aborts at the deadline or when the
    // client goes away (`req.signal`), and every store command ends by it (plus the answer grace). A stream (MCP's
    // SSE GET) outlives any request deadline and keeps the default command timeout.
    response =
      options.stream === true
        ? await authenticated(env, store, settings, given)
        : await runInScope(requestScope({ deadline: receivedAt + env.REQUEST_DEADLINE_MS, cancel: req.signal }), () =>
            authenticated(env, store, settings, given),
          );
  } catch (error) {
    response = fail(error, requestId, outcome);
    if (options.protectedResource === true && response.status === 401 && isKeyCarrier(credential?.carrier))
      response = forbidden(response);
  }
  return finishResponse(response, { req, requestId, receivedAt, keyId, headers, facts: outcome });

  async function authenticated(env: Env, store: Store, settings: Settings, runtime: Runtime): Promise<Response> {
    // Refund what crashed instances left reserved, now and then, after the answer (lib/credits).
    maybeSweepReservations(store, afterResponse);
    const account = await authenticate(store, env, settings, req, credential, options.protectedResource === true);
    keyId = account.keyId;
    const body = requestBody(req, { env });
    const kind = typeof options.limit === "function" ? await options.limit(req, body) : (options.limit ?? "requests");
    // An API key's own bucket; all the account's connected apps share one (lib/keys rateLimitSubject).
    const subject = rateLimitSubject(account);
    await limitRate(store, env, settings, subject, headers, kind);
    const report = (facts: Report) => addReport(outcome, facts);
    // More of the same limit the request was counted against (an MCP batch's other messages: reads stay reads).
    const countRequests = async (extra: number) => {
      const limit =
        kind === "reads"
          ? await checkReadRateLimit(store, settings.keys, subject, extra)
          : await checkRateLimit(store, env, subject, extra);
      Object.assign(headers, rateLimitHeaders(limit));
      return limit;
    };
    const context: ApiContext = {
      req,
      requestId,
      receivedAt,
      env,
      settings,
      store,
      get pool() {
        return runtime.pool;
      },
      get workQueue() {
        return runtime.workQueue;
      },
      get deliveries() {
        return runtime.deliveries;
      },
      account,
      body,
      report,
      countRequests,
    };
    // What the handler reaches by the account's id alone is checked against the credential too (an app reads only
    // the text of its own jobs: lib/jobs readJobResult, lib/keys actingApp).
    return actAs(account, () => runIdempotently(context, outcome, () => runHandler(handler, context, outcome)));
  }
}

/**
 * `ApiContext.report`: pages (and refunds) add up, the latest balance wins, one `replayable: false` is enough, the
 * first error code stays.
 */
function addReport(
  outcome: Outcome,
  { pages = 0, refunded = 0, creditsRemaining, replayable = true, code }: Report,
): void {
  outcome.pages += pages;
  outcome.refunded += refunded;
  if (creditsRemaining !== undefined) outcome.creditsRemaining = creditsRemaining;
  if (!replayable) outcome.replayable = false;
  outcome.code ??= code;
}

/**
 * A thrown error is the answer: what the handler reported is dropped — but for the credits it refunded, which the log
 * line still says — and its code goes to the log line.
 */
function fail(error: unknown, requestId: string, outcome: Outcome): Response {
  const { response, code } = errorAnswer(error, requestId);
  Object.assign(outcome, { pages: 0, creditsRemaining: undefined, replayable: true, code });
  return response;
}

/**
 * The per-key rate limit (`subject`: the key's, or the account's apps' together): its `RateLimit-*` headers go into
 * `headers` (every later answer carries them), or `429`.
 */
async function limitRate(
  store: Store,
  env: Env,
  settings: Settings,
  subject: string,
  headers: Record<string, string>,
  kind: RateLimitKind,
): Promise<void> {
  const limit =
    kind === "reads"
      ? await checkReadRateLimit(store, settings.keys, subject)
      : await checkRateLimit(store, env, subject);
  Object.assign(headers, rateLimitHeaders(limit));
  if (!limit.success) {
    throw new ApiError(
      "rate_limited",
      `Rate limit exceeded: ${limit.limit} requests per minute ${subject.startsWith("apps:") ? "for all the account's connected apps together" : "per key"}. Retry in ${headers["Retry-After"] ?? "a few"} s.`,
    );
  }
}

/** A carrier that holds only API keys (`x-api-key`, `api_key`): its refusal is `403` on a protected resource. */
function isKeyCarrier(carrier: CredentialCarrier | undefined): boolean {
  return carrier === "x-api-key" || carrier === "query";
}

/** A key refusal as `403` without the Bearer challenge (see `WithApiKeyOptions.protectedResource`); same body. */
function forbidden(response: Response): Response {
  const headers = new Headers(response.headers);
  headers.delete("www-authenticate");
  return new Response(response.body, { status: 403, headers });
}

async function authenticate(
  store: Store,
  env: Env,
  settings: Settings,
  req: Request,
  credential: ReturnType<typeof readCredential>,
  protectedResource: boolean,
): Promise<ApiKeyIdentity> {
  const origin = protectedResource ? serviceOrigin(env, req) : "";
  const challenge = (problem?: { description: string }) =>
    protectedResource
      ? {
          "WWW-Authenticate": bearerChallenge(
            origin,
            problem && { error: "invalid_token", description: problem.description },
          ),
        }
      : undefined;
  if (!credential)
    throw new ApiError("unauthorized", missingKeyMessage(req.headers, protectedResource), { headers: challenge() });
  if (protectedResource && credential.carrier === "bearer" && isAccessToken(credential.value)) {
    const token = await authenticateAccessToken(store, credential.value, oauthUrls(origin).resource);
    if ("refused" in token)
      throw new ApiError("unauthorized", token.refused, { headers: challenge({ description: token.refused }) });
    return {
      userId: token.userId,
      keyId: token.grantId,
      name: token.clientId,
      start: "oat_",
      lastUsedAt: null,
      scopes: token.scopes,
    };
  }
  if (!protectedResource && isAccessToken(credential.value)) {
    throw new ApiError(
      "unauthorized",
      "OAuth access tokens work only on /api/mcp; REST takes an API key (x-api-key: <key>)",
    );
  }
  // Failed lookups are limited per client address (each costs a store round trip): `429` past the limit.
  const address = clientAddress(req.headers, clientAddressOptions(env));
  const account = await resolveApiKeyFrom(store, settings.keys, credential.value, addressLimitKey(address));
  if (!account) {
    const message = "Invalid or revoked API key";
    throw new ApiError("unauthorized", message, {
      headers: credential.carrier === "bearer" ? challenge({ description: message }) : undefined,
    });
  }
  return account;
}

/**
 * Whether the credential behind `identity` still stands: its API key is not revoked, or its OAuth grant (a connected
 * app) is not. For what outlives the request that authenticated it (an MCP SSE stream checks it while open).
 */
export async function isCredentialActive(store: Store, identity: ApiKeyIdentity): Promise<boolean> {
  return identity.scopes === undefined
    ? isApiKeyActive(store, identity)
    : isGrantActive(store, identity.userId, identity.keyId);
}

/** The handler's answer with the reported balance as `x-credits-remaining` (before it is stored for replays). */
async function runHandler(handler: ApiHandler, context: ApiContext, outcome: Outcome): Promise<Response> {
  let response: Response;
  try {
    response = await handler(context);
  } catch (error) {
    return fail(error, context.requestId, outcome);
  }
  const { creditsRemaining } = outcome;
  return creditsRemaining === undefined
    ? response
    : withHeaders(response, { "x-credits-remaining": String(creditsRemaining) });
}

/**
 * `Idempotency-Key` (docs/api.md#idempotency-key): the same key from the same account with the same method, path and body
 * within 24 h replays the stored status, body and headers, and is not charged again. Only final outcomes are
 * stored; after a 5xx, a timeout or a 402 (or an answer reported not `replayable`) the claim is released so a
 * retry runs again.
 */
async function runIdempotently(context: ApiContext, outcome: Outcome, run: () => Promise<Response>): Promise<Response> {
  const { req, account, requestId } = context;
  const key = req.headers.get("idempotency-key");
  if (key === null) return run();

  const fingerprint = fingerprintRequest([
    req.method,
    new URL(req.url).pathname,
    ...(await fingerprintParts(req, context.body)),
  ]);
  const { userId } = account;
  const claim = await claimIdempotencyKey(context.store, { userId, key, fingerprint });
  switch (claim.status) {
    case "replay":
      outcome.replayed = true;
      return replay(claim.response);
    case "in-progress":
    case "mismatch":
      throw idempotencyRefusal(claim.status);
    case "claimed":
      break;
  }

  const { token } = claim;
  const response = await run();
  if (!isFinalOutcome(response.status) || !outcome.replayable) {
    await releaseIdempotencyKey(context.store, { userId, key, token }).catch((error: unknown) =>
      logStoreFailure(requestId, "release", error),
    );
    return response;
  }
  const text = await response.text();
  const stored: StoredResponse = { status: response.status, headers: {}, body: text };
  for (const name of STORED_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) stored.headers[name] = value;
  }
  // The work is done and charged: a failure to store it must not turn the answer into an error.
  await completeIdempotencyKey(context.store, { userId, key, token, response: stored }).catch((error: unknown) =>
    logStoreFailure(requestId, "complete", error),
  );
  return withHeaders(response, {}, text);
}

function replay(stored: StoredResponse): Response {
  const headers = new Headers(stored.headers);
  headers.set("Idempotent-Replayed", "true");
  return new Response(stored.body, { status: stored.status, headers });
}

function logStoreFailure(requestId: string, operation: string, error: unknown): void {
  const reason = isApiError(error) ? error.code : error instanceof Error ? error.name : "error";
  console.error(`[${requestId}] idempotency ${operation} failed (${reason})`);
}

/** The answer to a claim of an `Idempotency-Key` that is still running (`409`) or was used for another request (`422`). */
export function idempotencyRefusal(status: "in-progress" | "mismatch"): ApiError {
  return status === "in-progress"
    ? new ApiError(
        "conflict",
        "A request with this Idempotency-Key is still in progress; retry when it has finished to receive its response",
      )
    : new ApiError(
        "idempotency_mismatch",
        "This Idempotency-Key was already used with a different request body; use a new key for a new request",
      );
}
