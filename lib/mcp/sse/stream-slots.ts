import { ApiError } from "@/lib/api/errors";
import { errorLabel } from "@/lib/error-log";
import type { Store } from "@/lib/store";
import type { StreamCaps } from "../config";
import { SESSION_TTL_MS, sessionStreamEnd } from "./relay";

/*
 * Caps on open legacy SSE streams: each holds a function invocation, a poll loop and a connection for up to 295 s, so
 * opens alone (rate-limited per key) do not bound them — 50 keys an account, 60 opens a minute each. Two caps:
 * - per instance, in memory: what one process can carry (`503 overloaded`, another instance may have room);
 * - per account, across instances, in the store: one account cannot hold them all (`429 rate_limited`).
 * A stream takes a slot of each before it opens, renews the account's at each session refresh, and gives both back
 * when it ends, however it ends. A slot not renewed within the session's TTL frees itself, so an instance that died
 * cannot keep an account's slots taken for longer than that.
 */

/** How long an account's stream slot lasts unless its stream renews it: the session's TTL, renewed with it. */
const STREAM_SLOT_TTL_MS = SESSION_TTL_MS;
/** Longest `Retry-After` of an instance that is full: another instance may well have room sooner. */
const MAX_INSTANCE_RETRY_AFTER_S = 30;

/** A stream's hold on its slots. */
export interface StreamSlot {
  /** Keep the account's slot for another TTL (at the session refresh). Throws `unavailable` when the store is down. */
  renew(): Promise<void>;
  /** Give both slots back. Idempotent, never throws (a slot the store could not free expires by itself). */
  release(): Promise<void>;
}

const accountGroup = (userId: string) => `sse:${userId}`;

/** The streams of one route instance (of its process, in production). */
export class StreamSlots {
  /** Session id → the stream's hard end (epoch ms), for `Retry-After`. */
  private readonly open = new Map<string, number>();

  get size(): number {
    return this.open.size;
  }

  /**
   * Take a slot for a new stream of `userId`, or throw: `503 overloaded` when this instance already holds
   * `caps.perInstance` streams, `429 rate_limited` when the account holds `caps.perAccount` (both with `Retry-After`),
   * `unavailable` when the store is down (the stream could not work without it anyway).
   */
  async take(store: Store, userId: string, sessionId: string, hardEnd: number, caps: StreamCaps): Promise<StreamSlot> {
    if (this.open.size >= caps.perInstance) throw this.instanceFull(caps.perInstance);
    // Taken before the first await, so that concurrent opens count each other.
    this.open.set(sessionId, hardEnd);
    const group = accountGroup(userId);
    let held = false;
    try {
      const result = await store.limits.acquireSlot({
        group,
        holder: sessionId,
        limit: caps.perAccount,
        ttlMs: STREAM_SLOT_TTL_MS,
      });
      if (!result.acquired) throw accountFull(result.holders, caps.perAccount);
      held = true;
    } finally {
      if (!held) this.open.delete(sessionId);
    }
    let released = false;
    return {
      renew: () => store.limits.renewSlot({ group, holder: sessionId, ttlMs: STREAM_SLOT_TTL_MS }),
      release: async () => {
        if (released) return;
        released = true;
        this.open.delete(sessionId);
        await store.limits
          .releaseSlot(group, sessionId)
          .catch((error: unknown) =>
            console.warn(`[mcp] a stream slot could not be freed (${errorLabel(error)}); it expires by itself`),
          );
      },
    };
  }

  private instanceFull(limit: number): ApiError {
    const seconds = Math.min(MAX_INSTANCE_RETRY_AFTER_S, secondsUntil(Math.min(...this.open.values())));
    return new ApiError(
      "overloaded",
      `This server instance holds ${limit} open MCP SSE streams, its most; retry in ${seconds} s, or use Streamable HTTP (POST /api/mcp), which holds no stream`,
      { headers: { "Retry-After": String(seconds) } },
    );
  }
}

/** `429` for an account at its cap: a slot frees at the latest when the first of its streams reaches its hard end. */
function accountFull(holders: string[], limit: number): ApiError {
  const ends = holders.map(sessionStreamEnd).filter((end): end is number => end !== null);
  const seconds = ends.length > 0 ? secondsUntil(Math.min(...ends)) : Math.ceil(STREAM_SLOT_TTL_MS / 1000);
  return new ApiError(
    "rate_limited",
    `This account has ${limit} MCP SSE streams open, the most allowed (each connected SSE client holds one): close one, ` +
      `retry in ${seconds} s when the oldest ends, or use Streamable HTTP (POST /api/mcp), which holds no stream`,
    { headers: { "Retry-After": String(seconds) } },
  );
}

function secondsUntil(epochMs: number): number {
  return Number.isFinite(epochMs) ? Math.max(1, Math.ceil((epochMs - Date.now()) / 1000)) : 1;
}
