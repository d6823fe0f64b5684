import { ExpiringMap } from "../memory-support";
import {
  DELIVERY_LOG_SIZE,
  type DeliveryAttempt,
  type EndpointState,
  JOB_LOG_KEEP_MS,
  type WebhookAccount,
  type WebhookStore,
} from "./port";

export function createMemoryWebhookStore(): WebhookStore {
  const accounts = new Map<string, WebhookAccount>();
  const logs = new Map<string, DeliveryAttempt[]>();
  const jobLogs = new ExpiringMap<DeliveryAttempt[]>();
  /** Receivers by `{userId}\n{receiver}`; a disabled one is kept without expiry, as on Redis. */
  const endpoints = new ExpiringMap<EndpointState>();
  const endpointKey = (userId: string, receiver: string) => `${userId}\n${receiver}`;
  const endpointIndex = new Map<string, Set<string>>();
  const push = (list: DeliveryAttempt[] | undefined, attempt: DeliveryAttempt) =>
    [{ ...attempt }, ...(list ?? [])].slice(0, DELIVERY_LOG_SIZE);

  return {
    async getAccount(userId) {
      return { ...accounts.get(userId) };
    },

    async setSecrets(userId, { secret, secretCreatedAt, previousSecret, previousUntil, olderSecrets }) {
      const { defaultUrl } = accounts.get(userId) ?? {};
      accounts.set(userId, {
        secret,
        secretCreatedAt,
        ...(previousSecret && previousUntil !== undefined && { previousSecret, previousUntil }),
        ...(olderSecrets && { olderSecrets }),
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

    async getEndpoint(userId, receiver) {
      const state = endpoints.get(endpointKey(userId, receiver));
      return state ? { ...state } : null;
    },

    async recordEndpointFailure(userId, { receiver, url, error, now, policy }) {
      const key = endpointKey(userId, receiver);
      const before = endpoints.get(key);
      const failures = (before?.failures ?? 0) + 1;
      const failingSince = before?.failingSince ?? now;
      const over = failures - policy.free;
      const pause = over > 0 ? Math.min(policy.maxPauseMs, policy.pauseMs * 2 ** Math.min(over - 1, 40)) : 0;
      let disabledAt = before?.disabledAt;
      if (disabledAt === undefined && now - failingSince >= policy.disableAfterMs) disabledAt = now;
      const state: EndpointState = {
        receiver,
        url,
        failures,
        failingSince,
        lastFailureAt: now,
        pausedUntil: pause > 0 ? Math.floor(now + pause * policy.jitter) : 0,
        lastError: error.slice(0, 300),
        ...(disabledAt !== undefined && { disabledAt }),
      };
      endpoints.set(key, state, disabledAt === undefined ? policy.keepMs : undefined);
      let index = endpointIndex.get(userId);
      if (!index) endpointIndex.set(userId, (index = new Set()));
      index.delete(receiver);
      index.add(receiver);
      return { ...state };
    },

    async clearEndpoint(userId, receiver) {
      endpoints.delete(endpointKey(userId, receiver));
      endpointIndex.get(userId)?.delete(receiver);
    },

    async listEndpoints(userId) {
      const states: EndpointState[] = [];
      for (const receiver of endpointIndex.get(userId) ?? []) {
        const state = endpoints.get(endpointKey(userId, receiver));
        if (state) states.push({ ...state });
        else endpointIndex.get(userId)?.delete(receiver);
      }
      // As on Redis: disabled receivers first, then the most recent failure first.
      const rank = (state: EndpointState) => (state.disabledAt !== undefined ? Infinity : state.lastFailureAt);
      return states.sort((a, b) => (rank(a) === rank(b) ? 0 : rank(b) > rank(a) ? 1 : -1)).slice(0, 50);
    },
  };
}
