import { createHash } from "node:crypto";
import { z } from "zod";
import { call, flatHash, type RedisContext } from "../redis-support";
import {
  DELIVERY_LOG_SIZE,
  type DeliveryAttempt,
  deliveryAttemptSchema,
  endpointStateSchema,
  JOB_LOG_KEEP_MS,
  webhookAccountSchema,
  type WebhookStore,
} from "./port";
import { recordEndpointFailureScript } from "./scripts";

const parseAttempts = (raw: unknown): DeliveryAttempt[] =>
  z
    .array(z.string())
    .parse(raw ?? [])
    .flatMap((item) => {
      const parsed = deliveryAttemptSchema.safeParse(JSON.parse(item));
      return parsed.success ? [parsed.data] : [];
    });

/** A receiver's id in its key: the origin hashed (an origin holds `:` and `/`, and its length is the URL's choice). */
const receiverId = (receiver: string) => createHash("sha256").update(receiver).digest("base64url").slice(0, 22);

/** A receiver's hash (HGETALL: a flat array, or an object from the REST client), null when it has none. */
const parseEndpoint = (reply: unknown) => {
  const fields =
    reply === null
      ? null
      : Array.isArray(reply)
        ? flatHash.parse(reply)
        : z.record(z.string(), z.unknown()).parse(reply);
  return fields && fields.receiver !== undefined ? endpointStateSchema.parse(fields) : null;
};

export function createRedisWebhookStore({ redis, key }: RedisContext): WebhookStore {
  const recordFailure = redis.createScript<unknown>(recordEndpointFailureScript);
  return {
    async getAccount(userId) {
      const reply = await call("getWebhookAccount", () => redis.hgetall(key.webhook(userId)));
      const fields =
        reply === null
          ? {}
          : Array.isArray(reply)
            ? flatHash.parse(reply)
            : z.record(z.string(), z.unknown()).parse(reply);
      return webhookAccountSchema.parse(fields);
    },

    async setSecrets(userId, secrets) {
      const fields: Record<string, string> = {
        secret: secrets.secret,
        secretCreatedAt: String(secrets.secretCreatedAt),
      };
      if (secrets.previousSecret && secrets.previousUntil !== undefined) {
        Object.assign(fields, { previousSecret: secrets.previousSecret, previousUntil: String(secrets.previousUntil) });
      }
      if (secrets.olderSecrets) fields.olderSecrets = secrets.olderSecrets;
      const pipeline = redis.multi();
      pipeline.hdel(key.webhook(userId), "previousSecret", "previousUntil", "olderSecrets");
      pipeline.hset(key.webhook(userId), fields);
      await call("setWebhookSecrets", () => pipeline.exec());
    },

    async setDefaultUrl(userId, url) {
      await call("setWebhookUrl", () =>
        url === null
          ? redis.hdel(key.webhook(userId), "defaultUrl")
          : redis.hset(key.webhook(userId), { defaultUrl: url }),
      );
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
      return parseAttempts(
        await call("listWebhookAttempts", () => redis.lrange(key.webhookLog(userId), 0, DELIVERY_LOG_SIZE - 1)),
      );
    },

    async listJobAttempts(jobId) {
      return parseAttempts(
        await call("listJobWebhookAttempts", () => redis.lrange(key.jobWebhookLog(jobId), 0, DELIVERY_LOG_SIZE - 1)),
      );
    },

    async getEndpoint(userId, receiver) {
      return parseEndpoint(
        await call("getWebhookEndpoint", () => redis.hgetall(key.webhookEndpoint(userId, receiverId(receiver)))),
      );
    },

    async recordEndpointFailure(userId, { receiver, url, error, now, policy }) {
      const id = receiverId(receiver);
      const reply = await call("recordWebhookEndpointFailure", () =>
        recordFailure.exec(
          [key.webhookEndpoint(userId, id), key.webhookEndpoints(userId)],
          [
            String(now),
            receiver,
            url,
            error.slice(0, 300),
            String(policy.free),
            String(policy.pauseMs),
            String(policy.maxPauseMs),
            String(policy.disableAfterMs),
            String(policy.keepMs),
            id,
            String(policy.jitter),
          ],
        ),
      );
      return parseEndpoint(reply)!;
    },

    async clearEndpoint(userId, receiver) {
      const id = receiverId(receiver);
      const pipeline = redis.multi();
      pipeline.del(key.webhookEndpoint(userId, id));
      pipeline.zrem(key.webhookEndpoints(userId), id);
      await call("clearWebhookEndpoint", () => pipeline.exec());
    },

    async listEndpoints(userId) {
      const ids = z
        .array(z.string())
        .parse(
          await call("listWebhookEndpoints", () => redis.zrange(key.webhookEndpoints(userId), 0, 49, { rev: true })),
        );
      if (ids.length === 0) return [];
      const pipeline = redis.pipeline();
      for (const id of ids) pipeline.hgetall(key.webhookEndpoint(userId, id));
      const replies = await call("listWebhookEndpoints", () => pipeline.exec());
      return replies.flatMap((reply) => {
        const state = parseEndpoint(reply);
        return state ? [state] : [];
      });
    },
  };
}
