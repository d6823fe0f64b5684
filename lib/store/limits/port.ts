export interface RateLimitResult {
  success: boolean;
  limit: number;
  remaining: number;
  /** Epoch milliseconds when the current window ends. */
  reset: number;
  /** True when the store could not be asked and the request was let through (rate limits fail open). */
  failedOpen?: boolean;
}

/** Consecutive failures of one subject (a sign-in e-mail from one address) and until when it must wait. */
export interface BackoffState {
  failures: number;
  /** Epoch ms before which the next attempt is refused (0: not blocked). */
  until: number;
}

/** How failures turn into waits: `free` failures cost nothing, then `baseMs` doubling per failure up to `maxMs`. */
export interface BackoffPolicy {
  free: number;
  baseMs: number;
  maxMs: number;
  /** The record is forgotten this long after the last failure. */
  ttlMs: number;
}

/** What `acquireSlot` answers: whether the holder has a slot, and who holds the group's slots now. */
export interface SlotResult {
  acquired: boolean;
  /** The group's holders after the call (the caller's included when acquired), soonest to expire first. */
  holders: string[];
}

/**
 * Request rate limits (lib/keys, sign-in), sign-in back-off (lib/accounts), and counted slots (open MCP SSE streams
 * per account, lib/mcp).
 */
export interface LimitStore {
  /**
   * Count `weight` (default 1) hits against `identifier`'s fixed window of `limit` per `windowMs`; fails open. All or
   * nothing: a hit that does not fit in what is left of the window is refused and not counted, so a refused MCP batch
   * takes none of the key's remaining requests (`remaining` is then what is still left).
   */
  rateLimit(input: {
    bucket: string;
    identifier: string;
    limit: number;
    windowMs: number;
    weight?: number;
  }): Promise<RateLimitResult>;
  /** The back-off record of `subject`, or null when it has none. */
  getBackoff(subject: string): Promise<BackoffState | null>;
  /** Count one more failure of `subject` at `now` and return its new state (atomic: concurrent failures all count). */
  recordBackoffFailure(subject: string, now: number, policy: BackoffPolicy): Promise<BackoffState>;
  /** Forget `subject`'s failures (a success). */
  clearBackoff(subject: string): Promise<void>;
  /**
   * Take one of `limit` slots of `group` for `holder` (renewing it if it already has one), for `ttlMs`: a slot its
   * holder does not renew in time frees itself, so a crashed instance cannot keep slots taken. Atomic.
   */
  acquireSlot(input: { group: string; holder: string; limit: number; ttlMs: number }): Promise<SlotResult>;
  /** Keep `holder`'s slot for another `ttlMs`, taking it again if it had expired (whatever the limit). */
  renewSlot(input: { group: string; holder: string; ttlMs: number }): Promise<void>;
  /** Give `holder`'s slot back (nothing if it has none). */
  releaseSlot(group: string, holder: string): Promise<void>;
  /**
   * Record `id` as used in `scope` for `ttlMs` (Redis `SET NX PX`): true the first time, false for every later call
   * while the record lasts, on any instance (a single-use signature's nonce, lib/jobs/workers.ts). Unlike the rate
   * limits this fails closed: `unavailable` when the store cannot be reached.
   */
  claimOnce(input: { scope: string; id: string; ttlMs: number }): Promise<boolean>;
}
