import { randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { getEnv } from "@/lib/env";
import { configuredAllowList } from "@/lib/input";
import { getStore } from "@/lib/store";
import {
  enableWebhookReceiver,
  listWebhookReceivers,
  resetDeliveryQueue,
  rotateWebhookSecret,
  sendTestEvent,
  setDefaultWebhookUrl,
  webhookSettings,
  type Delivery,
} from "@/lib/webhooks";
import { createAccount, withStore, type TestAccount } from "../api/support";
import { startWebhookReceiver, waitFor, type WebhookReceiver } from "../support/webhook-receiver";
import { services } from "@/lib/services";

/*
 * Issue 29, point 2: one account's events cannot take every delivery slot, and a receiver that keeps failing backs
 * off as a whole. The real delivery queue (BullMQ on Redis; timers on the memory store) delivers events queued as a
 * job's end queues them, to real HTTP receivers on 127.0.0.1 (allowed by URL_ALLOW_HOSTS), one of which never answers.
 */

async function accountFor(receiver: WebhookReceiver): Promise<TestAccount> {
  const account = await createAccount(0);
  receiver.secret = (await rotateWebhookSecret(getStore(), account.userId)).secret;
  return account;
}

function event(account: TestAccount, url: string, n: number): Delivery {
  const type = "job.succeeded";
  const payload = JSON.stringify({ type, timestamp: new Date().toISOString(), data: { id: `job_${n}`, n } });
  return {
    eventId: `msg_${randomBytes(12).toString("base64url")}`,
    userId: account.userId,
    jobId: `job_fair${n}`,
    type,
    url,
    payload,
  };
}

/** Samples the receiver's open connections every 10 ms until stopped; the largest number seen. */
function watchConnections(receiver: WebhookReceiver): { stop(): number } {
  let most = 0;
  const timer = setInterval(() => (most = Math.max(most, receiver.openConnections())), 10);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(most, receiver.openConnections());
    },
  };
}

describe.each(["redis", "memory"] as const)("delivery fairness (%s store)", (kind) => {
  // Retries far apart: what a test sees is first attempts and the gate's decisions.
  withStore(kind, { URL_ALLOW_HOSTS: "127.0.0.1" });
  let sink: WebhookReceiver;
  let victimReceiver: WebhookReceiver;

  beforeAll(async () => {
    sink = await startWebhookReceiver();
    victimReceiver = await startWebhookReceiver();
    services({ webhooks: { timeoutMs: 3000, retryBaseMs: 60_000, maxAttempts: 3 } }).deliveries?.startWorker();
  });
  afterAll(async () => {
    await resetDeliveryQueue();
    await sink.close();
    await victimReceiver.close();
  });

  it("40 events to a receiver that never answers hold the account's 2 slots, not all 8: another account's event goes out at once", async () => {
    const share = 2; // webhookSettings().accountConcurrency
    const attacker = await accountFor(sink);
    const victim = await accountFor(victimReceiver);
    sink.script = Array.from({ length: 40 }, () => "hang" as const);
    const watch = watchConnections(sink);
    const queue = services().deliveries!;
    for (let n = 0; n < 40; n++) await queue.add(event(attacker, sink.url, n));
    await waitFor(() => (sink.received.length >= share ? true : undefined), 30_000, "the flood's first attempts");

    await queue.add(event(victim, victimReceiver.url, 1));
    const delivered = await waitFor(() => victimReceiver.received[0], 60_000, "the victim's event");
    expect(delivered.refused).toBeUndefined();
    expect(delivered.answered).toBe(200);
    // When the victim's event arrived, the flood had reached its receiver only through the account's share (before:
    // 8 at once per process, and the victim's event waited for all 40 to time out, 3 s per 8).
    expect(sink.received.length).toBeLessThanOrEqual(share);
    expect(watch.stop()).toBeLessThanOrEqual(share);
    expect(webhookSettings().accountConcurrency).toBe(share);
  }, 90_000);
});

describe.each(["redis", "memory"] as const)("a receiver that keeps failing backs off as a whole (%s store)", (kind) => {
  // A pause of about 1 s, doubling; the events' own retries 1 s apart too (they find the receiver paused).
  withStore(kind, { URL_ALLOW_HOSTS: "127.0.0.1" });
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    services({ webhooks: { timeoutMs: 1500, retryBaseMs: 1000, maxAttempts: 13 } }).deliveries?.startWorker();
  });
  afterEach(() => {
    receiver.script = [];
    receiver.received.length = 0;
  });
  afterAll(async () => {
    await resetDeliveryQueue();
    await receiver.close();
  });

  it("after 5 failures in a row its events wait without using attempts; one probe at a time, each pause longer; then all flow", async () => {
    const account = await accountFor(receiver);
    receiver.script = Array.from({ length: 7 }, () => 500);
    const events = Array.from({ length: 10 }, (_, n) => event(account, receiver.url, n));
    for (const item of events) await services().deliveries!.add(item);
    await waitFor(
      () => (receiver.received.filter((item) => item.answered === 200).length === 10 ? true : undefined),
      60_000,
      "all ten",
    );

    const arrivals = receiver.received;
    const firstGap = arrivals.findIndex((item, i) => i > 0 && item.at - arrivals[i - 1]!.at >= 850);
    // The burst before the receiver was paused: its 5 free failures, and at most one more already under way (the
    // account's second slot). Before: the 10 events at once, 7 failures in the first second.
    expect(firstGap).toBeGreaterThanOrEqual(5);
    expect(firstGap).toBeLessThanOrEqual(6);
    // Then probes, one at a time: each failed one pauses the receiver again (≥ 0.9 s), until one gets through.
    const probes = arrivals.slice(firstGap);
    const failedProbes = probes.filter((item) => item.answered === 500).length;
    expect(failedProbes).toBe(7 - firstGap);
    for (let i = 0; i <= failedProbes; i++)
      expect(probes[i]!.at - arrivals[firstGap + i - 1]!.at).toBeGreaterThanOrEqual(850);
    // Every event delivered once; those that waited out the pauses did so without using an attempt.
    const ids = arrivals.filter((item) => item.answered === 200).map((item) => item.headers["webhook-id"]);
    expect(new Set(ids).size).toBe(10);
    const log = await getStore().webhooks.listAttempts(account.userId);
    const failed = new Set(log.filter((attempt) => !attempt.ok).map((attempt) => attempt.eventId));
    for (const attempt of log.filter((item) => item.ok && !failed.has(item.eventId))) expect(attempt.attempt).toBe(1);
    expect(await listWebhookReceivers(getStore(), account.userId)).toEqual([]);
  }, 90_000);

  it("failing for 5 days disables it: its events are dropped (and say why) until the account re-enables it or a test event gets through", async () => {
    const account = await accountFor(receiver);
    const { breaker } = webhookSettings();
    const origin = new URL(receiver.url).origin;
    // Five failures five days ago: paused then, the pause long over.
    for (let i = 0; i < 5; i++) {
      await getStore().webhooks.recordEndpointFailure(account.userId, {
        receiver: origin,
        url: receiver.url,
        error: "The receiver answered HTTP 503",
        now: Date.now() - breaker.disableAfterMs - 60_000,
        policy: { ...breaker, jitter: 1 },
      });
    }
    const [failing] = await listWebhookReceivers(getStore(), account.userId);
    expect(failing).toMatchObject({ receiver: origin, failures: 5, disabledAt: null, pausedUntil: null });
    expect(Date.parse(failing!.disablesAt!)).toBeLessThan(Date.now());

    // The next attempt (a probe) fails too: disabled; the event's retry is dropped, and so is a new event, unsent.
    receiver.script = [500];
    const first = event(account, receiver.url, 1);
    const second = event(account, receiver.url, 2);
    await services().deliveries!.add(first);
    await waitFor(
      async () => ((await listWebhookReceivers(getStore(), account.userId))[0]?.disabledAt ? true : undefined),
      30_000,
      "disabled",
    );
    await services().deliveries!.add(second);
    const dropped = await waitFor(
      async () => {
        const log = await getStore().webhooks.listAttempts(account.userId);
        const notSent = log.filter((attempt) => attempt.error?.startsWith("Not sent"));
        return notSent.length === 2 ? notSent : undefined;
      },
      30_000,
      "both events dropped",
    );
    expect(dropped.map((attempt) => attempt.eventId).sort()).toEqual([first.eventId, second.eventId].sort());
    for (const attempt of dropped) {
      expect(attempt).toMatchObject({ status: null, ok: false, retrying: false });
      expect(attempt.error).toMatch(
        new RegExp(
          `^Not sent: ${origin.replaceAll(".", "\\.")} failed every delivery for 5 days and was disabled on .* UTC; re-enable it on the settings page$`,
        ),
      );
    }
    expect(receiver.received).toHaveLength(1);
    const [disabled] = await listWebhookReceivers(getStore(), account.userId);
    expect(disabled).toMatchObject({
      receiver: origin,
      url: receiver.url,
      failures: 6,
      pausedUntil: null,
      disablesAt: null,
      lastError: "The receiver answered HTTP 500",
    });

    // Re-enabled: the next event is delivered.
    await enableWebhookReceiver(getStore(), account.userId, origin);
    expect(await listWebhookReceivers(getStore(), account.userId)).toEqual([]);
    await services().deliveries!.add(event(account, receiver.url, 3));
    await waitFor(() => receiver.received.find((item) => item.answered === 200), 30_000, "the event after re-enabling");

    // Disabled again; a test event that gets through re-enables it too.
    for (let i = 0; i < 6; i++) {
      await getStore().webhooks.recordEndpointFailure(account.userId, {
        receiver: origin,
        url: receiver.url,
        error: "The receiver answered HTTP 503",
        now: Date.now() - (i < 5 ? breaker.disableAfterMs + 60_000 : 0),
        policy: { ...breaker, jitter: 1 },
      });
    }
    expect((await listWebhookReceivers(getStore(), account.userId))[0]?.disabledAt).not.toBeNull();
    await setDefaultWebhookUrl(getStore(), account.userId, receiver.url, configuredAllowList(getEnv()));
    expect((await sendTestEvent(getStore(), account.userId, { allowHosts: configuredAllowList(getEnv()) })).ok).toBe(
      true,
    );
    expect(await listWebhookReceivers(getStore(), account.userId)).toEqual([]);
  }, 90_000);
});
