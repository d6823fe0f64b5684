import { z } from "zod";
import { ExpiringMap } from "./memory-support";
import { call, flatHash, type RedisContext } from "./redis-support";

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
const JOB_LOG_KEEP_MS = 9 * 24 * 60 * 60 * 1000;

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

const parseAttempts = (raw: unknown): DeliveryAttempt[] =>
  z
    .array(z.string())
    .parse(raw ?? [])
    .flatMap((item) => {
      const parsed = deliveryAttemptSchema.safeParse(JSON.parse(item));
      return parsed.success ? [parsed.data] : [];
    });

export function createRedisWebhookStore({ redis, key }: RedisContext): WebhookStore {
  return {
    async getAccount(userId) {
      const reply = await call("getWebhookAccount", () => redis.hgetall(key.webhook(userId)));
      const fields = reply === null ? {} : Array.isArray(reply) ? flatHash.parse(reply) : z.record(z.string(), z.unknown()).parse(reply);
      return webhookAccountSchema.parse(fields);
    },

    async setSecrets(userId, secrets) {
      const fields: Record<string, string> = { secret: secrets.secret, secretCreatedAt: String(secrets.secretCreatedAt) };
      if (secrets.previousSecret && secrets.previousUntil !== undefined) {
        Object.assign(fields, { previousSecret: secrets.previousSecret, previousUntil: String(secrets.previousUntil) });
      }
      const pipeline = redis.multi();
      pipeline.hdel(key.webhook(userId), "previousSecret", "previousUntil");
      pipeline.hset(key.webhook(userId), fields);
      await call("setWebhookSecrets", () => pipeline.exec());
    },

    async setDefaultUrl(userId, url) {
      await call("setWebhookUrl", () => (url === null ? redis.hdel(key.webhook(userId), "defaultUrl") : redis.hset(key.webhook(userId), { defaultUrl: url })));
    },

    async recordAttempt(userId, attempt) {
      const item = JSON.stringify(attempt);
      const pipeline = redis.multi();
      pipeline.lpush(key.webhookLog(userId), item);
      pipeline.ltrim(key.webhookLog(userId), 0, DELIVERY_LOG_SIZE - 1);
      if (attempt.jobId) {
        pipeline.lpush(key.jobWebhookLog(attempt.jobId), item);
        pipeline.ltrim(key.jobWebhookLog(attempt.jobId), 0, DELIVERY_LOG_SIZE - 1);
        pipeline.pexpire(key.jobWebhookLog(attempt.jobId), JOB_LOG_KEEP_MS);
      }
      await call("recordWebhookAttempt", () => pipeline.exec());
    },

    async listAttempts(userId) {
      return parseAttempts(await call("listWebhookAttempts", () => redis.lrange(key.webhookLog(userId), 0, DELIVERY_LOG_SIZE - 1)));
    },

    async listJobAttempts(jobId) {
      return parseAttempts(await call("listJobWebhookAttempts", () => redis.lrange(key.jobWebhookLog(jobId), 0, DELIVERY_LOG_SIZE - 1)));
    },
  };
}

export function createMemoryWebhookStore(): WebhookStore {
  const accounts = new Map<string, WebhookAccount>();
  const logs = new Map<string, DeliveryAttempt[]>();
  const jobLogs = new ExpiringMap<DeliveryAttempt[]>();
  const push = (list: DeliveryAttempt[] | undefined, attempt: DeliveryAttempt) => [{ ...attempt }, ...(list ?? [])].slice(0, DELIVERY_LOG_SIZE);

  return {
    async getAccount(userId) {
      return { ...accounts.get(userId) };
    },

    async setSecrets(userId, { secret, secretCreatedAt, previousSecret, previousUntil }) {
      const { defaultUrl } = accounts.get(userId) ?? {};
      accounts.set(userId, {
        secret,
        secretCreatedAt,
        ...(previousSecret && previousUntil !== undefined && { previousSecret, previousUntil }),
        ...(defaultUrl && { defaultUrl }),
      });
    },

    async setDefaultUrl(userId, url) {
      const { defaultUrl: _old, ...rest } = accounts.get(userId) ?? {};
      accounts.set(userId, url === null ? rest : { ...rest, defaultUrl: url });
    },

    async recordAttempt(userId, attempt) {
      logs.set(userId, push(logs.get(userId), attempt));
      if (attempt.jobId) jobLogs.set(attempt.jobId, push(jobLogs.get(attempt.jobId), attempt), JOB_LOG_KEEP_MS);
    },

    async listAttempts(userId) {
      return (logs.get(userId) ?? []).map((attempt) => ({ ...attempt }));
    },

    async listJobAttempts(jobId) {
      return (jobLogs.get(jobId) ?? []).map((attempt) => ({ ...attempt }));
    },
  };
}
