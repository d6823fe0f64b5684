import { getEnv, type Env } from "@/lib/env";

/** Webhook delivery settings: the configuration's (docs/configuration.md#webhooks) and the constants beside them. */
export interface WebhookSettings {
  /** One attempt's budget: DNS, connect, send and the receiver's answer (`WEBHOOK_TIMEOUT_MS`, 10 s). */
  timeoutMs: number;
  /** The first retry's delay; each next one doubles (`WEBHOOK_RETRY_BASE_MS`, 60 s). */
  retryBaseMs: number;
  /** Longest delay between two attempts. */
  retryCapMs: number;
  /** Attempts of one event in all (`WEBHOOK_MAX_ATTEMPTS`, 13: about a day with the defaults). */
  maxAttempts: number;
  /** How long the secret before a rotation keeps signing beside the new one. */
  previousSecretMs: number;
}

const HOUR = 60 * 60 * 1000;

export function webhookSettings(env: Env = getEnv()): WebhookSettings {
  return {
    timeoutMs: env.WEBHOOK_TIMEOUT_MS,
    retryBaseMs: env.WEBHOOK_RETRY_BASE_MS,
    retryCapMs: 6 * HOUR,
    maxAttempts: env.WEBHOOK_MAX_ATTEMPTS,
    previousSecretMs: 24 * HOUR,
  };
}

/**
 * The delay before attempt `failed + 1`, after `failed` failed attempts: base × 2^(failed − 1), at most 6 h, give or
 * take 10 % at random (so that the retries of many events that failed together do not arrive together). With the
 * defaults (60 s, 13 attempts): 1, 2, 4 … 256 min, then 6 h three times — the last attempt about 26 h after the first.
 */
export function retryDelay(failed: number, settings: Pick<WebhookSettings, "retryBaseMs" | "retryCapMs">, random = Math.random()): number {
  const delay = Math.min(settings.retryBaseMs * 2 ** Math.max(0, failed - 1), settings.retryCapMs);
  return Math.round(delay * (0.9 + 0.2 * random));
}
