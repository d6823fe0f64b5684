import { z } from "zod";
import { getEnv } from "@/lib/env";

/** `maxDuration` of `/api/mcp` in seconds (the Vercel Hobby maximum). The route file repeats it as a literal. */
export const MCP_MAX_DURATION_S = 300;

/**
 * Default budget of one `tools/call`: under the 30 s timeout of the seed's sample client configuration, so that a
 * call too slow for it ends as a `timeout` tool error (refunded) before the client gives up — instead of being
 * charged for an answer nobody receives, and again for each of its 3 retries.
 */
export const MCP_TOOL_DEADLINE_MS = 28_000;

/**
 * Interval of `notifications/progress` during a `tools/call` that asks for them (`_meta.progressToken`). Clients
 * that reset their timeout on progress (`resetTimeoutOnProgress` in the SDKs) then wait for a long document instead
 * of giving up at their request timeout; 5 s is well under the shortest timeouts in use (the sample client's 30 s).
 */
export const MCP_PROGRESS_INTERVAL_MS = 5_000;

const ms = (fallback: number, min: number) => z.coerce.number().int().min(min).default(fallback);

/*
 * The MCP surface's own settings, read from the environment through this schema (lib/env.ts holds the
 * service-wide variables), each with its default. Parsed on every call: cheap, and tests change them.
 */
const mcpEnvSchema = z.object({
  /** Budget of one `tools/call`, capped by `REQUEST_DEADLINE_MS`. */
  MCP_TOOL_DEADLINE_MS: ms(MCP_TOOL_DEADLINE_MS, 1000),
  /** Hard end of an SSE stream: it closes itself this long after opening, before the function's `maxDuration`. */
  MCP_SSE_LIFETIME_MS: ms((MCP_MAX_DURATION_S - 5) * 1000, 1000),
  /**
   * The last stretch of a stream's life in which it closes at the first quiet moment with no posted message in
   * progress, so that a `tools/call` accepted before it can still finish (default: the tool budget + 5 s, at most
   * half the lifetime).
   */
  MCP_SSE_DRAIN_MS: z.coerce.number().int().min(0).optional(),
  /** Interval of the `: ping` comment that keeps proxies from closing an idle stream. */
  MCP_SSE_PING_MS: ms(15_000, 100),
  /** How often the stream polls its mailbox while a posted message is in progress (and for a while after). */
  MCP_SSE_POLL_MS: ms(100, 10),
  /** The slowest poll of an idle stream (the interval grows towards it when nothing happens). */
  MCP_SSE_IDLE_POLL_MS: ms(1000, 10),
});

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
   * A stream opened by a GET that carried a post-2024-11-05 `mcp-protocol-version` closes this long after opening if
   * nothing was posted to its session: that GET may have been a Streamable HTTP client's optional inbound stream,
   * which would ignore the session and hold the stream for its whole life (see `refuseGet` in route.ts).
   */
  unusedMs: number;
}

/** Default of `SseTiming.storeOutageMs`. */
const SSE_STORE_OUTAGE_MS = 10_000;
/** Default of `SseTiming.unusedMs`: a legacy client posts `initialize` as soon as it reads the endpoint. */
const SSE_UNUSED_MS = 10_000;

interface McpConfig {
  /** Budget of one `tools/call` in ms (≤ `REQUEST_DEADLINE_MS`). */
  toolDeadlineMs: number;
  sse: SseTiming;
}

/** The MCP settings from the environment. Throws one readable error listing every bad variable. */
export function readMcpConfig(env: Record<string, string | undefined> = process.env): McpConfig {
  const parsed = mcpEnvSchema.safeParse(env);
  if (!parsed.success) throw new Error(`Invalid MCP configuration:\n${z.prettifyError(parsed.error)}`);
  const values = parsed.data;
  const toolDeadlineMs = Math.min(values.MCP_TOOL_DEADLINE_MS, getEnv().REQUEST_DEADLINE_MS);
  return {
    toolDeadlineMs,
    sse: {
      lifetimeMs: values.MCP_SSE_LIFETIME_MS,
      drainMs: values.MCP_SSE_DRAIN_MS ?? Math.min(toolDeadlineMs + 5_000, values.MCP_SSE_LIFETIME_MS / 2),
      pingMs: values.MCP_SSE_PING_MS,
      pollMs: values.MCP_SSE_POLL_MS,
      idlePollMs: Math.max(values.MCP_SSE_POLL_MS, values.MCP_SSE_IDLE_POLL_MS),
      storeOutageMs: SSE_STORE_OUTAGE_MS,
      unusedMs: SSE_UNUSED_MS,
    },
  };
}
