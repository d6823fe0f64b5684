import { ApiError } from "@/lib/api/errors";
import { isFinalOutcome, type ApiContext, type RequestBody } from "@/lib/http";
import { rateLimitHeaders } from "@/lib/keys";
import { SCOPES, bearerChallenge, serviceOrigin, type Scope } from "@/lib/oauth";
import type { ProcessDocumentResult } from "@/lib/intake";
import { readsJobsOnly } from "./tasks";

/*
 * What both transports of `/api/mcp` share around a POST: how keys are checked, how a batch counts against the rate
 * limit, how tool calls report their charges, and the settings of a tool call.
 */

/** How a route instance runs tool calls (from the configuration, or shortened by tests). */
export interface ToolCallSettings {
  /** Budget of one `tools/call` in ms (`mcpConfig().toolDeadlineMs`: 28 s, capped by `REQUEST_DEADLINE_MS`). */
  toolDeadlineMs: number;
  /** Interval of a tool call's progress notifications (`MCP_PROGRESS_INTERVAL_MS`). */
  progressIntervalMs: number;
  /** How often a call waiting for a job looks at it (undefined: the jobs' default, 1 s). */
  jobPollMs: number | undefined;
}

/** The `Allow` header of a method `/api/mcp` does not serve. */
export const ALLOW = "GET, POST, OPTIONS";

/**
 * How `/api/mcp` checks credentials: it is an OAuth protected resource (an access token or an API key; no credentials
 * is `401` with the challenge that leads MCP clients to sign in), the `api_key` query is accepted (clients that can
 * set no header), and a refused key sent as `x-api-key` or `api_key` is `403` without a challenge, so clients show
 * why rather than start a sign-in that cannot help. docs/mcp.md, Authentication errors.
 */
export const KEY_OPTIONS = { acceptQueryKey: true, protectedResource: true } as const;

/**
 * `req` with its headers changed by `edit`; method, body and signal kept. Built from the request's parts, never as
 * `new Request(req, init)`: that reads the input's private state, which the request object Next.js hands to a route
 * handler does not have (`TypeError: Cannot read private member #state`, a 500 on the built server and in dev:
 * issue 39). Tests that call the handlers with a plain `Request` cannot see it; scripts/smoke.ts checks it.
 */
export function withEditedHeaders(req: Request, edit: (headers: Headers) => void): Request {
  const headers = new Headers(req.headers);
  edit(headers);
  const init: RequestInit & { duplex?: "half" } = { method: req.method, headers, signal: req.signal };
  if (req.body !== null && req.method !== "GET" && req.method !== "HEAD") {
    init.body = req.body;
    init.duplex = "half";
  }
  return new Request(req.url, init);
}

/** The most bytes of a POST body read to tell a read about jobs before its limit is counted: those messages are small. */
const READ_BYTES = 16_384;

/**
 * The per-key limit a POST counts against, decided once its key is authenticated: `reads` when it only reads about
 * jobs (`readsJobsOnly`), else `requests`. A body declared larger than a read about jobs is a request without being
 * read here; an unreadable one is a request too (its handler answers the error).
 */
export async function limitOfPost(req: Request, body: RequestBody): Promise<"requests" | "reads"> {
  if (body.kind !== "json" || Number(req.headers.get("content-length") ?? "0") > READ_BYTES) return "requests";
  try {
    return readsJobsOnly(await body.json()) ? "reads" : "requests";
  } catch {
    return "requests";
  }
}

/**
 * The tool calls' outcomes, reported to `withApiKey`: what they charged (`x-credits-remaining`, the log line) and
 * whether one failed in a way REST would not store for `Idempotency-Key` replays (402, 429, 5xx) — then the answer
 * is not `replayable`, so a retry with the same key runs again instead of replaying the failure.
 */
export function reportCharges(report: ApiContext["report"]) {
  return {
    onExtracted: (result: ProcessDocumentResult) =>
      report({ pages: result.response.creditsUsed, creditsRemaining: result.creditsRemaining }),
    onToolError: (error: ApiError) => report({ replayable: isFinalOutcome(error.status), code: error.code }),
    // A job's pages are reserved at once and charged as they are read (lib/jobs), wherever its answer goes.
    onJobSubmitted: (creditsRemaining: number) => report({ creditsRemaining }),
  };
}

/**
 * Each message of a JSON-RPC batch counts against the key's rate limit, as a request of its own — against its reads
 * when the batch only reads about jobs (`tasks/result`, `tasks/get`…: a batch of 30 `tasks/result` is 30 reads, not
 * one; issue 29, point 3), against its requests otherwise. The HTTP request was counted once by `withApiKey`, so a
 * batch of n messages takes n − 1 more (and its `RateLimit-Remaining` says so). A batch that does not fit in what is
 * left of the minute is refused whole (`429`, nothing run, nothing charged, and none of what was left taken): running
 * part of it would leave the client to sort out which calls happened.
 */
export async function countBatchCalls(countRequests: ApiContext["countRequests"], body: unknown): Promise<void> {
  const messages = Array.isArray(body) ? body.length : 1;
  if (messages <= 1) return;
  const limit = await countRequests(messages - 1);
  if (limit.success) return;
  const headers = rateLimitHeaders(limit);
  throw new ApiError(
    "rate_limited",
    `Rate limit exceeded: this batch has ${messages} messages and each counts as a request; ${limit.remaining} of ${limit.limit} per minute per key are left. Retry in ${headers["Retry-After"] ?? "a few"} s, or send fewer messages per batch.`,
    { headers },
  );
}

/** The OAuth scope each JSON-RPC method needs; methods not listed (initialize, tools/list, ping…) need none. */
const METHOD_SCOPES: Readonly<Record<string, Scope>> = {
  "tools/call": "documents:read",
  "tasks/get": "documents:read",
  "tasks/result": "documents:read",
  "tasks/list": "jobs:manage",
  "tasks/cancel": "jobs:manage",
};

/**
 * An OAuth access token may do only what its scopes allow (an API key has every right): a message whose method
 * needs a scope the token lacks refuses the whole POST with `403` and the `insufficient_scope` challenge naming the
 * scopes to ask for (RFC 6750 §3.1; the MCP spec's step-up authorization), before anything runs or is charged.
 */
export function checkScopes({ account, req, env }: Pick<ApiContext, "account" | "req" | "env">, body: unknown): void {
  const granted = account.scopes;
  if (granted === undefined) return;
  const methods = (Array.isArray(body) ? body : [body]).map((message) =>
    typeof message === "object" && message !== null ? (message as { method?: unknown }).method : undefined,
  );
  const missing = [
    ...new Set(methods.map((method) => (typeof method === "string" ? METHOD_SCOPES[method] : undefined))),
  ].filter((scope): scope is Scope => scope !== undefined && !granted.includes(scope));
  if (missing.length === 0) return;
  const description = `This app was not allowed to ${missing.map((scope) => SCOPES[scope].toLowerCase()).join(", nor to ")}: sign in again and allow ${missing.join(" and ")}`;
  throw new ApiError("forbidden", description, {
    headers: {
      "WWW-Authenticate": bearerChallenge(serviceOrigin(env, req), {
        error: "insufficient_scope",
        description,
        scopes: [...new Set([...granted, ...missing])],
      }),
    },
  });
}
