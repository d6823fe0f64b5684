import { performance } from "node:perf_hooks";
import { Webhook } from "standardwebhooks";
import { z } from "zod";
import { isApiError } from "@/lib/api/errors";
import { errorLabel } from "@/lib/error-log";
import { postRemote, type AllowList, type ResolveHost } from "@/lib/input";
import type { DeliveryAttempt, Store } from "@/lib/store";
import { SERVICE_VERSION } from "@/lib/version";
import { signingSecrets } from "./secrets";
import { webhookSettings, type WebhookSettings } from "./settings";

/** One event to deliver, as it waits in the queue: the body is fixed when the event happens, the same every attempt. */
export const deliverySchema = z.object({
  eventId: z.string(),
  userId: z.string(),
  jobId: z.string().optional(),
  type: z.string(),
  url: z.string(),
  /** The JSON body, byte for byte what every attempt sends. */
  payload: z.string(),
});
export type Delivery = z.infer<typeof deliverySchema>;

export interface AttemptOutcome {
  attempt: DeliveryAttempt;
  /** A failure no retry can fix (the URL is no longer allowed, the account has no secret, the receiver said 410). */
  permanent: boolean;
  /** A failure of the receiver (it counts towards pausing it: gate.ts), not of the account (no secret). */
  receiverFailed: boolean;
  /** The receiver's `Retry-After` (a 429 or 503, say), in ms, at most `retryCapMs`: the next attempt waits that long. */
  retryAfterMs?: number;
}

/** A `Retry-After` value (seconds, or an HTTP date) as ms from `now`; undefined when it is neither or in the past. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  const ms = /^\d{1,10}$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now;
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

const USER_AGENT = `ocr-service/${SERVICE_VERSION} (+webhook)`;

/**
 * One attempt to deliver an event: signed now with the account's secrets (Standard Webhooks, through the
 * `standardwebhooks` package: `webhook-id`, `webhook-timestamp` = this attempt's time, `webhook-signature` with one
 * `v1,…` per secret), POSTed through the SSRF guard within `settings.timeoutMs`, and recorded in the account's and the
 * job's delivery log. A 2xx answer is a delivery; anything else is a failure the queue retries (after the receiver's
 * `Retry-After` when it sent one). `allowHosts`: the configuration's `URL_ALLOW_HOSTS`, parsed (`configuredAllowList(env)`).
 */
export async function attemptDelivery(
  store: Store,
  delivery: Delivery,
  attempt: number,
  {
    final,
    resolveHost,
    allowHosts,
    settings = webhookSettings(),
  }: {
    final: boolean;
    resolveHost?: ResolveHost;
    allowHosts: AllowList;
    /** The delivery queue's settings (an attempt's budget, the longest wait). Default: the constants. */
    settings?: Pick<WebhookSettings, "timeoutMs" | "retryCapMs">;
  },
): Promise<AttemptOutcome> {
  const started = new Date();
  const clock = performance.now();
  let status: number | null = null;
  let error: string | undefined;
  let permanent = false;
  let retryAfterMs: number | undefined;

  const secrets = signingSecrets(await store.webhooks.getAccount(delivery.userId), started.getTime());
  const signable = secrets.length > 0;
  if (!signable) {
    error = "The account has no webhook signing secret (create one on the settings page)";
    permanent = true;
  } else {
    const signature = secrets
      .map((secret) => new Webhook(secret).sign(delivery.eventId, started, delivery.payload))
      .join(" ");
    try {
      let retryAfter: string | undefined;
      ({ status, retryAfter } = await postRemote(delivery.url, {
        label: "webhook URL",
        allowHosts,
        body: delivery.payload,
        timeoutMs: settings.timeoutMs,
        resolveHost,
        headers: {
          "user-agent": USER_AGENT,
          "webhook-id": delivery.eventId,
          "webhook-timestamp": String(Math.floor(started.getTime() / 1000)),
          "webhook-signature": signature,
        },
      }));
      if (status < 200 || status > 299) {
        error = `The receiver answered HTTP ${status}`;
        const asked = parseRetryAfter(retryAfter);
        if (asked !== undefined) retryAfterMs = Math.min(asked, settings.retryCapMs);
      }
      // 410 Gone: the receiver wants no more of this (Standard Webhooks' advice); the event is not retried.
      if (status === 410) permanent = true;
    } catch (caught) {
      error = isApiError(caught) ? caught.message : `Delivery failed (${errorLabel(caught)})`;
      permanent = isApiError(caught) && caught.code === "invalid_request";
    }
  }

  const ok = error === undefined;
  const record = await recordAttempt(store, delivery, {
    at: started.toISOString(),
    attempt,
    status,
    latencyMs: Math.max(0, Math.round(performance.now() - clock)),
    ok,
    ...(error !== undefined && { error }),
    ...(!ok && { retrying: !permanent && !final }),
  });
  return {
    attempt: record,
    permanent,
    receiverFailed: !ok && signable,
    ...(retryAfterMs !== undefined && { retryAfterMs }),
  };
}

/**
 * An event dropped without an attempt because its receiver is disabled (gate.ts): recorded once in the account's and
 * the job's delivery log, so both say why nothing arrived.
 */
export async function recordDropped(
  store: Store,
  delivery: Delivery,
  attempt: number,
  { receiver, since }: { receiver: string; since: number },
  disableAfterMs: number,
): Promise<DeliveryAttempt> {
  const days = Math.round(disableAfterMs / 86_400_000);
  const when = new Date(since).toISOString().slice(0, 16).replace("T", " ");
  return recordAttempt(store, delivery, {
    at: new Date().toISOString(),
    attempt,
    status: null,
    latencyMs: 0,
    ok: false,
    error: `Not sent: ${receiver} failed every delivery for ${days} days and was disabled on ${when} UTC; re-enable it on the settings page`,
    retrying: false,
  });
}

async function recordAttempt(
  store: Store,
  delivery: Delivery,
  outcome: Pick<DeliveryAttempt, "at" | "attempt" | "status" | "latencyMs" | "ok" | "error" | "retrying">,
): Promise<DeliveryAttempt> {
  const { error, ...rest } = outcome;
  const record: DeliveryAttempt = {
    ...rest,
    eventId: delivery.eventId,
    type: delivery.type,
    ...(delivery.jobId && { jobId: delivery.jobId }),
    url: delivery.url,
    ...(error !== undefined && { error: error.slice(0, 300) }),
  };
  await store.webhooks.recordAttempt(delivery.userId, record).catch((caught: unknown) => {
    console.warn(`[webhooks] recording a delivery attempt failed (${errorLabel(caught)})`);
  });
  return record;
}
