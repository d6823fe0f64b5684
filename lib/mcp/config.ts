import { MCP_MAX_DURATION_S, type Env } from "@/lib/env";

// The route's settings: constants beside their code, the tool budget capped by `REQUEST_DEADLINE_MS` (lib/env.ts).
export { MCP_MAX_DURATION_S };

/**
 * Interval of `notifications/progress` during a `tools/call` that asks for them (`_meta.progressToken`). Clients
 * that reset their timeout on progress (`resetTimeoutOnProgress` in the SDKs) then wait for a long document instead
 * of giving up at their request timeout; 5 s is well under the shortest timeouts in use (the sample client's 30 s).
 */
export const MCP_PROGRESS_INTERVAL_MS = 5_000;

export interface SseTiming {
  /** Hard end of the stream, ms after it opened. */
  lifetimeMs: number;
  /** From `lifetimeMs - drainMs` on, the stream closes at the first quiet moment with nothing pending. */
  drainMs: number;
  pingMs: number;
  pollMs: number;
  idlePollMs: number;
  /** A stream whose mailbox has been unreachable this long closes (the client reconnects, and gets 503 meanwhile). */
  storeOutageMs: number;
  /**
   * How often an open stream refreshes its session (TTL), renews its stream slot and checks that its key is still
   * active (a revoked key closes the stream).
   */
  refreshMs: number;
  /**
   * A stream opened by a GET that carried a post-2024-11-05 `mcp-protocol-version` closes this long after opening if
   * nothing was posted to its session: that GET may have been a Streamable HTTP client's optional inbound stream,
   * which would ignore the session and hold the stream for its whole life (see `refuseGet` in route.ts).
   */
  unusedMs: number;
}

/**
 * Budget of one `tools/call` (was `MCP_TOOL_DEADLINE_MS`): under the 30 s timeout of the sample client configuration
 * (docs/mcp.md), so that a call too slow for it ends as a `timeout` tool error (refunded) before the client gives up.
 */
const MCP_TOOL_DEADLINE_MS = 28_000;
/** Hard end of an SSE stream, before the function's `maxDuration` (was `MCP_SSE_LIFETIME_MS`). */
const SSE_LIFETIME_MS = (MCP_MAX_DURATION_S - 5) * 1000;
/** Interval of the `: ping` comment that keeps proxies from closing an idle stream (was `MCP_SSE_PING_MS`). */
const SSE_PING_MS = 15_000;
/** Open streams one account may hold across all instances, and one instance at most (were `MCP_SSE_MAX_STREAMS_*`). */
const STREAMS_PER_ACCOUNT = 20;
const STREAMS_PER_INSTANCE = 200;

/** `SseTiming.pollMs`: a posted message's answer reaches the stream within a tenth of a second. */
const SSE_POLL_MS = 100;
/**
 * `SseTiming.idlePollMs`: the slowest poll of an idle stream, one Redis read a second per open stream (the stream caps
 * were measured with it: docs/decisions.md#caps-on-open-mcp-sse-streams).
 */
const SSE_IDLE_POLL_MS = 1000;
/** `SseTiming.drainMs` beyond the tool budget: a call accepted as the drain begins still has its whole budget. */
const SSE_DRAIN_MARGIN_MS = 5_000;
/** Default of `SseTiming.refreshMs`: well within the session's and the slot's 60 s TTL. */
const SSE_REFRESH_MS = 15_000;
/** Default of `SseTiming.storeOutageMs`. */
const SSE_STORE_OUTAGE_MS = 10_000;
/** Default of `SseTiming.unusedMs`: a legacy client posts `initialize` as soon as it reads the endpoint. */
const SSE_UNUSED_MS = 10_000;

/** Caps on open SSE streams (docs/mcp.md#behaviour-and-decisions). */
export interface StreamCaps {
  /** Streams one account holds across all instances (20; was `MCP_SSE_MAX_STREAMS_PER_ACCOUNT`); past it `429`. */
  perAccount: number;
  /** Streams one route instance holds (200; was `MCP_SSE_MAX_STREAMS_PER_INSTANCE`); past it `503 overloaded`. */
  perInstance: number;
}

export interface McpConfig {
  /** Budget of one `tools/call` in ms (≤ `REQUEST_DEADLINE_MS`). */
  toolDeadlineMs: number;
  sse: SseTiming;
  streams: StreamCaps;
}

/**
 * The MCP settings of a parsed configuration (the caller's `env`): the variables' values with the
 * rules that tie them together (the tool budget within the request deadline, the drain within the lifetime).
 */
export function mcpConfig(
  env: Pick<Env, "REQUEST_DEADLINE_MS">,
  given: { toolDeadlineMs?: number; lifetimeMs?: number; pingMs?: number } = {},
): McpConfig {
  const toolDeadlineMs = Math.min(given.toolDeadlineMs ?? MCP_TOOL_DEADLINE_MS, env.REQUEST_DEADLINE_MS);
  const lifetimeMs = given.lifetimeMs ?? SSE_LIFETIME_MS;
  return {
    toolDeadlineMs,
    sse: {
      lifetimeMs,
      drainMs: Math.min(toolDeadlineMs + SSE_DRAIN_MARGIN_MS, lifetimeMs / 2),
      pingMs: given.pingMs ?? SSE_PING_MS,
      pollMs: SSE_POLL_MS,
      idlePollMs: SSE_IDLE_POLL_MS,
      storeOutageMs: SSE_STORE_OUTAGE_MS,
      refreshMs: SSE_REFRESH_MS,
      unusedMs: SSE_UNUSED_MS,
    },
    streams: { perAccount: STREAMS_PER_ACCOUNT, perInstance: STREAMS_PER_INSTANCE },
  };
}
