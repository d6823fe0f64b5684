import { z } from "zod";
import { call, flatHash, type RedisContext } from "../redis-support";
import { DELIVERY_LOG_SIZE, type DeliveryAttempt, deliveryAttemptSchema, JOB_LOG_KEEP_MS, webhookAccountSchema, type WebhookStore } from "./port";

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
