import type { Env } from "@/lib/env";
import type { Runtime } from "@/lib/jobs";
import type { ApiKeyIdentity, RateLimitResult } from "@/lib/keys";
import type { Settings } from "@/lib/settings";
import type { Store } from "@/lib/store";
import type { RequestBody } from "./body";

/**
 * What every handler gets from its wrapper (`withRequest`, `withApiKey`): the request, and the process's services
 * (its configuration, its modules' settings and its store), taken once by the wrapper and handed down as arguments —
 * the layers below do not reach for `getEnv()` / `getStore()` or a settings global themselves (issue 33;
 * lib/services.ts, lib/settings.ts).
 */
export interface RequestContext extends Runtime {
  req: Request;
  requestId: string;
  /** Epoch ms when the request arrived: the base of `processingTime` and of the request deadline. */
  receivedAt: number;
  /** The configuration (`getEnv()` when the request arrived). */
  readonly env: Env;
  /** The modules' settings: the process's (lib/settings.ts), with the route instance's overrides (`route.with`). */
  readonly settings: Settings;
  /** The store, built on first read (a route that never touches it does not connect). */
  readonly store: Store;
}

/**
 * What a handler tells `withApiKey` about its answer, instead of setting headers itself: the wrapper alone turns it
 * into `x-credits-remaining`, the log line and the `Idempotency-Key` decision. Reports add up (an MCP batch reports
 * each tool call): pages are summed, the latest balance wins, one `replayable: false` is enough. A handler that
 * throws has its reports dropped: the answer is then the error.
 */
export interface Report {
  /** Pages charged. */
  pages?: number;
  /** The account's balance after the charge, sent as `x-credits-remaining` (and stored with a replayable answer). */
  creditsRemaining?: number;
  /**
   * Credits given back after the work was done because its answer could not be delivered (an MCP SSE session whose
   * stream closed meanwhile). Unlike the rest, kept in the log line when the handler then throws.
   */
  refunded?: number;
  /**
   * False when the answer reports a failure of the moment (timeout, overloaded, no credits…) inside a 2xx, as MCP
   * tool errors do: like a REST 402 or 5xx it is not stored for `Idempotency-Key` replays, so a retry runs again.
   */
  replayable?: boolean;
  /**
   * The error code of a failure the answer reports inside a `200` (an MCP tool error: `isError: true`), for the log
   * line's `code=` as a REST error's; the first one of a batch.
   */
  code?: string;
}

/** What `withApiKey` hands a keyed handler. */
export interface ApiContext extends RequestContext {
  /** The account and key behind the request's API key. */
  account: ApiKeyIdentity;
  /** The body, read at most once (the idempotency fingerprint and the handler see the same bytes), within its limit. */
  body: RequestBody;
  report(report: Report): void;
  /**
   * Count `extra` more requests against the key's rate limit, beyond the one `withApiKey` counted for the HTTP request
   * (an MCP batch counts each of its `tools/call`s). All or nothing: when they do not fit in what is left of the window
   * nothing is counted and the result says `success: false` (the handler then refuses the request). Either way the
   * answer's `RateLimit-*` headers follow the result, so they say what the request took.
   */
  countRequests(extra: number): Promise<RateLimitResult>;
}
