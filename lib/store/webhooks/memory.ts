import { ExpiringMap } from "../memory-support";
import { DELIVERY_LOG_SIZE, type DeliveryAttempt, JOB_LOG_KEEP_MS, type WebhookAccount, type WebhookStore } from "./port";

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
