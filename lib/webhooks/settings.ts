import type { BreakerPolicy } from "@/lib/store";

/**
 * Webhook delivery settings: constants (docs/configuration.md#webhooks; they were the `WEBHOOK_*` variables), which
 * a caller's `overrides` may shorten (a process's `--settings`, tests: lib/settings.ts).
 */
export interface WebhookSettings {
  /** One attempt's budget: DNS, connect, send and the receiver's answer (10 s). */
  timeoutMs: number;
  /** The first retry's delay; each next one doubles (60 s). */
  retryBaseMs: number;
  /** Longest delay between two attempts. */
  retryCapMs: number;
  /** Attempts of one event in all (13: about a day). */
  maxAttempts: number;
  /** How long the secret before a rotation keeps signing beside the new one. */
  previousSecretMs: number;
  /** Deliveries one account may have in flight at once, all processes together (2). */
  accountConcurrency: number;
  /** Deliveries one process makes at once (BullMQ's worker concurrency). */
  processConcurrency: number;
  /** A receiver's circuit breaker (lib/webhooks/gate.ts). */
  breaker: Omit<BreakerPolicy, "jitter">;
}

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

/** Failed attempts in a row a receiver may have before the next one pauses it (docs/decisions.md#webhook-fairness). */
const BREAKER_FREE_FAILURES = 4;
/** A receiver failing this long without a single success is disabled (Svix: 5 days; Stripe: 3). */
const DISABLE_AFTER_MS = 5 * DAY;

/** Overrides of the webhook settings; `breaker.pauseMs` follows `retryBaseMs` unless given. */
export type WebhookSettingsOverrides = Partial<Omit<WebhookSettings, "breaker">> & {
  breaker?: Partial<WebhookSettings["breaker"]>;
};

export function webhookSettings(overrides: WebhookSettingsOverrides = {}): WebhookSettings {
  const { breaker, ...given } = overrides;
  const base = {
    timeoutMs: 10_000,
    retryBaseMs: 60_000,
    retryCapMs: 6 * HOUR,
    maxAttempts: 13,
    previousSecretMs: 24 * HOUR,
    accountConcurrency: 2,
    processConcurrency: 8,
    ...given,
  };
  return {
    ...base,
    breaker: {
      free: BREAKER_FREE_FAILURES,
      pauseMs: base.retryBaseMs,
      maxPauseMs: 6 * HOUR,
      disableAfterMs: DISABLE_AFTER_MS,
      keepMs: 30 * DAY,
      ...breaker,
    },
  };
}

/**
 * The delay before attempt `failed + 1`, after `failed` failed attempts: base × 2^(failed − 1), at most 6 h, give or
 * take 10 % at random (so that the retries of many events that failed together do not arrive together). With the
 * defaults (60 s, 13 attempts): 1, 2, 4 … 256 min, then 6 h three times — the last attempt about 26 h after the first.
 */
export function retryDelay(
  failed: number,
  settings: Pick<WebhookSettings, "retryBaseMs" | "retryCapMs">,
  random = Math.random(),
): number {
  const delay = Math.min(settings.retryBaseMs * 2 ** Math.max(0, failed - 1), settings.retryCapMs);
  return Math.round(delay * (0.9 + 0.2 * random));
}
