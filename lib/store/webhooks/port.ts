import { z } from "zod";

/**
 * Webhooks (lib/webhooks is the caller): an account's signing secrets and default URL, and the last delivery
 * attempts per account and per job.
 *
 * The signing secrets are stored as they are (`whsec_…`): signing needs them, and whoever can read this store can
 * already spend the account's credits. They are shown to the account once, when created or rotated.
 */

export const webhookAccountSchema = z.object({
  /** The current signing secret, `whsec_` and base64. */
  secret: z.string().startsWith("whsec_").optional(),
  secretCreatedAt: z.coerce.number().int().optional(),
  /** The secret before the last rotation: it keeps signing until `previousUntil` (epoch ms). */
  previousSecret: z.string().startsWith("whsec_").optional(),
  previousUntil: z.coerce.number().int().optional(),
  /**
   * Secrets replaced before the previous one and still in their 24 h of grace (a second rotation within a day): JSON,
   * `[{"secret","until"}]`, newest first (lib/webhooks/secrets.ts reads it).
   */
  olderSecrets: z.string().optional(),
  /** Where job events go when a job names no `webhook.url`. */
  defaultUrl: z.string().optional(),
});
export type WebhookAccount = z.infer<typeof webhookAccountSchema>;

export const deliveryAttemptSchema = z.object({
  /** When the attempt started. */
  at: z.iso.datetime(),
  /** The event's `webhook-id` (the same on every attempt). */
  eventId: z.string(),
  type: z.string(),
  jobId: z.string().optional(),
  url: z.string(),
  /** 1 for the first. */
  attempt: z.number().int().min(1),
  /** The receiver's HTTP status; null when none came (refused, unreachable, timed out). */
  status: z.number().int().nullable(),
  latencyMs: z.number().int().min(0),
  ok: z.boolean(),
  /** Why it failed, when no status says it. */
  error: z.string().optional(),
  /** Whether another attempt is scheduled after this failed one. */
  retrying: z.boolean().optional(),
});
export type DeliveryAttempt = z.infer<typeof deliveryAttemptSchema>;

/**
 * A receiver (a webhook URL's origin) whose deliveries of one account have been failing: consecutive failed attempts
 * since the last success, the pause they earned (circuit breaker), and when it was disabled. A receiver with no
 * record is healthy: a success deletes it.
 */
export const endpointStateSchema = z.object({
  /** The receiver: the URL's origin (`https://example.com:8443`). */
  receiver: z.string(),
  /** The last URL that failed there. */
  url: z.string(),
  /** Failed attempts in a row. */
  failures: z.coerce.number().int().min(0),
  /** When the first of them was made (epoch ms). */
  failingSince: z.coerce.number().int(),
  lastFailureAt: z.coerce.number().int(),
  /** Events to it wait until then (epoch ms; 0: not paused). */
  pausedUntil: z.coerce.number().int(),
  /** Why the last attempt failed. */
  lastError: z.string().optional(),
  /** Set when it failed for `disableAfterMs` without a success: its events are dropped until it is re-enabled. */
  disabledAt: z.coerce.number().int().optional(),
});
export type EndpointState = z.infer<typeof endpointStateSchema>;

/** When a failing receiver pauses and is disabled (lib/webhooks/settings.ts `breakerPolicy`). */
export interface BreakerPolicy {
  /** Failures in a row that do not pause the receiver (the next one does). */
  free: number;
  /** The first pause; each later failure doubles it. */
  pauseMs: number;
  maxPauseMs: number;
  /** Failing this long without a success disables the receiver. */
  disableAfterMs: number;
  /** How long a failing (not disabled) receiver's record is kept after its last failure. */
  keepMs: number;
  /** The pause is multiplied by this (0.9–1.1: receivers that failed together do not all wake together). */
  jitter: number;
}

/** How many attempts are kept per account and per job. */
export const DELIVERY_LOG_SIZE = 20;
/** How long a job's attempts are kept: as long as its record at most (lib/store/jobs/common.ts). */
export const JOB_LOG_KEEP_MS = 9 * 24 * 60 * 60 * 1000;

export interface WebhookStore {
  getAccount(userId: string): Promise<WebhookAccount>;
  /** Replace the account's secrets (a creation or a rotation). */
  setSecrets(
    userId: string,
    secrets: Required<Pick<WebhookAccount, "secret" | "secretCreatedAt">> &
      Pick<WebhookAccount, "previousSecret" | "previousUntil" | "olderSecrets">,
  ): Promise<void>;
  /** Set (or, with null, clear) the account's default URL. */
  setDefaultUrl(userId: string, url: string | null): Promise<void>;
  /** Record an attempt in the account's log and, for a job's event, the job's; each keeps the last `DELIVERY_LOG_SIZE`. */
  recordAttempt(userId: string, attempt: DeliveryAttempt): Promise<void>;
  /** The account's last attempts, newest first. */
  listAttempts(userId: string): Promise<DeliveryAttempt[]>;
  /** A job's last attempts, newest first. */
  listJobAttempts(jobId: string): Promise<DeliveryAttempt[]>;
  /** The state of one of the account's receivers; null when it is healthy. */
  getEndpoint(userId: string, receiver: string): Promise<EndpointState | null>;
  /**
   * Count a failed attempt to a receiver, atomically: one more failure in a row (since `now` when it is the first);
   * past `policy.free` the receiver is paused for `pauseMs × 2^(failures − free − 1)` (at most `maxPauseMs`); failing
   * `disableAfterMs` since the first failure disables it. Returns the state after.
   */
  recordEndpointFailure(
    userId: string,
    input: { receiver: string; url: string; error: string; now: number; policy: BreakerPolicy },
  ): Promise<EndpointState>;
  /** A delivery to the receiver succeeded, or the account re-enabled it: it is healthy again (its record is deleted). */
  clearEndpoint(userId: string, receiver: string): Promise<void>;
  /** The account's failing, paused and disabled receivers, most recent failure first. */
  listEndpoints(userId: string): Promise<EndpointState[]>;
}
