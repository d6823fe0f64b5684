import { z } from "zod";
import { getEnv } from "@/lib/env";

/** `maxDuration` of `/api/mcp` in seconds (the Vercel Hobby maximum). The route file repeats it as a literal. */
export const MCP_MAX_DURATION_S = 300;

const ms = (fallback: number, min: number) => z.coerce.number().int().min(min).default(fallback);

/*
 * The legacy SSE stream's timing. Read from the environment through this schema (lib/env.ts holds the service-wide
 * variables; these belong to the relay), each with its default.
 */
const mcpEnvSchema = z.object({
  /** Hard end of an SSE stream: it closes itself this long after opening, before the function's `maxDuration`. */
  MCP_SSE_LIFETIME_MS: ms((MCP_MAX_DURATION_S - 5) * 1000, 1000),
  /**
   * The last stretch of a stream's life in which it closes as soon as no posted message is being processed, so that a
   * `tools/call` accepted before it can still finish (default: `REQUEST_DEADLINE_MS` + 5 s).
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
  /** From `lifetimeMs - drainMs` on, the stream closes as soon as nothing is pending. */
  drainMs: number;
  pingMs: number;
  pollMs: number;
  idlePollMs: number;
  /** A stream whose mailbox has been unreachable this long closes (the client reconnects, and gets 503 meanwhile). */
  storeOutageMs: number;
}

/** Default of `SseTiming.storeOutageMs`. */
export const SSE_STORE_OUTAGE_MS = 10_000;

/** The SSE timing from the environment (parsed on every call: cheap, and tests change it). */
export function readSseTiming(env: NodeJS.ProcessEnv = process.env): SseTiming {
  const parsed = mcpEnvSchema.safeParse(env);
  if (!parsed.success) throw new Error(`Invalid MCP configuration:\n${z.prettifyError(parsed.error)}`);
  const values = parsed.data;
  return {
    lifetimeMs: values.MCP_SSE_LIFETIME_MS,
    drainMs: values.MCP_SSE_DRAIN_MS ?? getEnv().REQUEST_DEADLINE_MS + 5_000,
    pingMs: values.MCP_SSE_PING_MS,
    pollMs: values.MCP_SSE_POLL_MS,
    idlePollMs: Math.max(values.MCP_SSE_POLL_MS, values.MCP_SSE_IDLE_POLL_MS),
    storeOutageMs: SSE_STORE_OUTAGE_MS,
  };
}
