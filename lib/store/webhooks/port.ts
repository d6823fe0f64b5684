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

/** How many attempts are kept per account and per job. */
export const DELIVERY_LOG_SIZE = 20;
/** How long a job's attempts are kept: as long as its record at most (lib/store/jobs/common.ts). */
export const JOB_LOG_KEEP_MS = 9 * 24 * 60 * 60 * 1000;

export interface WebhookStore {
  getAccount(userId: string): Promise<WebhookAccount>;
  /** Replace the account's secrets (a creation or a rotation). */
  setSecrets(userId: string, secrets: Required<Pick<WebhookAccount, "secret" | "secretCreatedAt">> & Pick<WebhookAccount, "previousSecret" | "previousUntil">): Promise<void>;
  /** Set (or, with null, clear) the account's default URL. */
  setDefaultUrl(userId: string, url: string | null): Promise<void>;
  /** Record an attempt in the account's log and, for a job's event, the job's; each keeps the last `DELIVERY_LOG_SIZE`. */
  recordAttempt(userId: string, attempt: DeliveryAttempt): Promise<void>;
  /** The account's last attempts, newest first. */
  listAttempts(userId: string): Promise<DeliveryAttempt[]>;
  /** A job's last attempts, newest first. */
  listJobAttempts(jobId: string): Promise<DeliveryAttempt[]>;
}
