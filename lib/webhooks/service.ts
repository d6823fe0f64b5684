import type { WebhookAttempt } from "@/lib/api/schemas";
import { ApiError } from "@/lib/api/errors";
import { errorLabel } from "@/lib/error-log";
import type { AllowList, ResolveHost } from "@/lib/input";
import type { JobRecord, Store } from "@/lib/store";
import { attemptDelivery } from "./deliver";
import { jobEndEvent, jobEventId, testEvent, testEventId } from "./events";
import { receiverOf } from "./gate";
import type { DeliveryQueue } from "./queue";
import { webhookSettings } from "./settings";
import { checkWebhookUrl } from "./url";

/**
 * The webhook URL of a job being submitted: its `webhook.url` (checked: `400` when bad, before anything is charged),
 * else the account's default, else none. A webhook needs the account's signing secret and a delivery queue.
 * `allowHosts`: the configuration's `URL_ALLOW_HOSTS`, parsed (`configuredAllowList(env)`).
 */
export async function resolveJobWebhook(
  store: Store,
  userId: string,
  url: string | undefined,
  {
    resolveHost,
    allowHosts,
    deliveries,
  }: { resolveHost?: ResolveHost; allowHosts: AllowList; deliveries: DeliveryQueue | null },
): Promise<string | undefined> {
  const account = await store.webhooks.getAccount(userId);
  const chosen = url !== undefined ? await checkWebhookUrl(url, { resolveHost, allowHosts }) : account.defaultUrl;
  if (chosen === undefined) return undefined;
  if (!account.secret) {
    if (url === undefined) return undefined;
    throw new ApiError(
      "invalid_request",
      "webhook: this account has no webhook signing secret yet. Create one on the settings page (/settings#webhooks); deliveries are signed with it.",
    );
  }
  if (!deliveries) {
    throw new ApiError(
      "unavailable",
      "Webhooks are not available on this deployment: they need a TCP connection to its Redis (REDIS_URL)",
    );
  }
  return chosen;
}

/**
 * Announce that a job ended, when it has a webhook: its event is queued for delivery. Called once by whoever ended
 * the job (the store's end step succeeds for one caller only); the event id is the job's, so a second announcement
 * is the same message. A job cancelled before any of its pages was read has no event (`announcesEnd`). A failure
 * here is logged, never the job's.
 */
export async function announceJobEnd(store: Store, deliveries: DeliveryQueue | null, jobId: string): Promise<void> {
  try {
    const record = await store.jobs.getJob(jobId);
    if (!record?.webhookUrl || !announcesEnd(record)) return;
    await queueJobEvent(deliveries, record);
  } catch (error) {
    console.error(`[webhooks] queuing the end event of ${jobId} failed (${errorLabel(error)})`);
  }
}

/**
 * Whether a job's end is an event: not when it was cancelled before any page was read (docs/api.md#events). Its
 * account cancelled it, and the cancel's answer already says so; an event for it would be a delivery anyone could
 * have sent for free, as often as they liked (submit, cancel: every credit refunded).
 */
export function announcesEnd(record: JobRecord): boolean {
  return !(record.status === "cancelled" && record.pagesDone + record.pagesFailed === 0);
}

async function queueJobEvent(queue: DeliveryQueue | null, record: JobRecord): Promise<void> {
  if (!queue || !record.webhookUrl) return;
  const event = jobEndEvent(record);
  await queue.add({
    eventId: jobEventId(record.id),
    userId: record.userId,
    jobId: record.id,
    type: event.type,
    url: record.webhookUrl,
    payload: JSON.stringify(event),
  });
}

/** Test events one account may send per minute. */
const TEST_EVENTS_PER_MINUTE = 10;

/**
 * The settings page's "Send a test event": a `webhook.test` event to the account's default URL, delivered now (one
 * attempt, not retried) so the page can show how it went; it is in the delivery log as every attempt is.
 * `allowHosts`: the configuration's `URL_ALLOW_HOSTS`, parsed (`configuredAllowList(env)`).
 */
export async function sendTestEvent(
  store: Store,
  userId: string,
  { resolveHost, allowHosts }: { resolveHost?: ResolveHost; allowHosts: AllowList },
): Promise<WebhookAttempt> {
  // Each test is a request the service makes to a URL of the account's choosing: a few a minute are enough.
  const limit = await store.limits.rateLimit({
    bucket: "webhook-test",
    identifier: userId,
    limit: TEST_EVENTS_PER_MINUTE,
    windowMs: 60_000,
  });
  if (!limit.success) {
    throw new ApiError(
      "rate_limited",
      `At most ${TEST_EVENTS_PER_MINUTE} test events a minute: try again in ${Math.max(1, Math.ceil((limit.reset - Date.now()) / 1000))} s`,
    );
  }
  const account = await store.webhooks.getAccount(userId);
  if (!account.defaultUrl)
    throw new ApiError("invalid_request", "Set a default webhook URL first: the test event goes there");
  if (!account.secret)
    throw new ApiError("invalid_request", "Create a signing secret first: the test event is signed with it");
  const event = testEvent();
  const { attempt } = await attemptDelivery(
    store,
    { eventId: testEventId(), userId, type: event.type, url: account.defaultUrl, payload: JSON.stringify(event) },
    1,
    { final: true, resolveHost, allowHosts },
  );
  // A receiver that answers a test event is healthy again: paused or disabled, its events flow (gate.ts). A failed
  // test does not count towards pausing it (the account asked for it).
  if (attempt.ok) await store.webhooks.clearEndpoint(userId, receiverOf(account.defaultUrl));
  return attempt;
}

/** A receiver of the account that has been failing, as the settings page shows it. */
export interface WebhookReceiverView {
  receiver: string;
  /** The last URL that failed there. */
  url: string;
  /** Failed attempts in a row. */
  failures: number;
  failingSince: string;
  /** Its events wait until then (null: not paused). */
  pausedUntil: string | null;
  /** When it was disabled (null: it is not). */
  disabledAt: string | null;
  /** When it will be disabled if nothing gets through before (null once it is). */
  disablesAt: string | null;
  lastError: string | null;
}

/** The account's failing, paused and disabled receivers (healthy ones have no record). */
export async function listWebhookReceivers(
  store: Store,
  userId: string,
  now = Date.now(),
): Promise<WebhookReceiverView[]> {
  const { disableAfterMs } = webhookSettings().breaker;
  return (await store.webhooks.listEndpoints(userId)).map((state) => ({
    receiver: state.receiver,
    url: state.url,
    failures: state.failures,
    failingSince: new Date(state.failingSince).toISOString(),
    pausedUntil:
      state.pausedUntil > now && state.disabledAt === undefined ? new Date(state.pausedUntil).toISOString() : null,
    disabledAt: state.disabledAt === undefined ? null : new Date(state.disabledAt).toISOString(),
    disablesAt: state.disabledAt === undefined ? new Date(state.failingSince + disableAfterMs).toISOString() : null,
    lastError: state.lastError ?? null,
  }));
}

/**
 * Re-enable (or un-pause) one of the account's receivers: its failures are forgotten and the next event to it is
 * attempted at once. Events dropped while it was disabled are not sent again.
 */
export async function enableWebhookReceiver(store: Store, userId: string, receiver: string): Promise<void> {
  await store.webhooks.clearEndpoint(userId, receiverOf(receiver));
}

/** The account's last delivery attempts, newest first. */
export async function listWebhookAttempts(store: Store, userId: string): Promise<WebhookAttempt[]> {
  return store.webhooks.listAttempts(userId);
}

/** A job's webhook as its status shows it: the URL and its last attempts. */
export async function jobWebhookView(
  store: Store,
  record: JobRecord,
): Promise<{ url: string; deliveries: WebhookAttempt[] } | undefined> {
  if (!record.webhookUrl) return undefined;
  return { url: record.webhookUrl, deliveries: await store.webhooks.listJobAttempts(record.id) };
}
