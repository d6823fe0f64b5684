import { randomBytes } from "node:crypto";
import { errorLabel } from "@/lib/error-log";
import type { EndpointState, Store } from "@/lib/store";
import type { Delivery } from "./deliver";
import type { WebhookSettings } from "./settings";

/**
 * Whether an event may be attempted now: the fairness of delivery and the receivers' circuit breakers
 * (docs/decisions.md#webhook-fairness), checked by whoever took the event from the queue (queue.ts), before it
 * connects anywhere.
 *
 * - **An account's share.** At most `accountConcurrency` attempts of one account are in flight at once, all processes
 *   together (a slot of the store's `webhooks:{userId}` group, a Redis sorted set changed by one Lua script, leased
 *   for longer than an attempt can take). An event of an account at its share waits (moved back to the queue's
 *   delayed set without using an attempt), so the other accounts' events are taken meanwhile: a receiver that never
 *   answers holds two delivery slots, not all of them.
 * - **A failing receiver backs off as a whole.** A receiver is a URL's origin, per account. After `free` failed
 *   attempts in a row it is paused (the first pause the retry base, 60 s, doubling, at most 6 h): its events wait
 *   without using attempts, and when the pause ends one event at a time probes it. A success makes it healthy again;
 *   failing for five days without one disables it: its events are dropped (each recorded once) until the account
 *   re-enables it on the settings page, or a test event to it succeeds.
 */
export type Gate =
  | { kind: "go"; done(outcome: { ok: boolean; countsForReceiver: boolean; error?: string }): Promise<void> }
  | { kind: "wait"; until: number; reason: "account" | "paused" | "probing" }
  | { kind: "disabled"; since: number; receiver: string };

/** The receiver a URL delivers to: its origin (scheme, host, port). */
export function receiverOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

const accountGroup = (userId: string) => `webhooks:${userId}`;
const probeGroup = (userId: string, receiver: string) => `webhook-probe:${userId}:${receiver}`;
/** A slot holder: when it started, so that a refused event can tell how long the slots have been held. */
const holderToken = (now: number) => `${now}.${randomBytes(6).toString("base64url")}`;

/**
 * How long an event of an account at its share waits before it is taken again: about as long as the oldest attempt
 * in flight has run (at least 0.5 s, at most one attempt's timeout), ±50 %. Fast deliveries free their slots soon
 * and the wait stays short; attempts hanging until their timeout make it grow, so a thousand waiting events are not
 * taken and put back a thousand times a second.
 */
export function accountWaitMs(holders: string[], now: number, timeoutMs: number, random = Math.random()): number {
  const starts = holders.map((holder) => Number(holder.split(".")[0])).filter(Number.isFinite);
  const held = starts.length > 0 ? now - Math.min(...starts) : 0;
  return Math.round(Math.min(timeoutMs, Math.max(500, held)) * (0.5 + random));
}

/** Events of a paused receiver wake spread over a tenth of the pause (at most 30 s) after it ends. */
function pausedUntil(state: EndpointState, now: number, pauseMs: number, random: number): number {
  const spread = Math.min(30_000, Math.max(0, state.pausedUntil - now, pauseMs) / 10);
  return state.pausedUntil + Math.round(spread * random);
}

/** Ask whether `delivery` may be attempted now; on `go`, call `done` with how the attempt went. */
export async function enterDelivery(
  store: Store,
  delivery: Delivery,
  settings: WebhookSettings,
  now = Date.now(),
  random = Math.random,
): Promise<Gate> {
  const { userId } = delivery;
  const receiver = receiverOf(delivery.url);
  const state = await store.webhooks.getEndpoint(userId, receiver);
  if (state?.disabledAt !== undefined) return { kind: "disabled", since: state.disabledAt, receiver };
  if (state && state.pausedUntil > now) {
    return { kind: "wait", reason: "paused", until: pausedUntil(state, now, settings.breaker.pauseMs, random()) };
  }
  const leaseMs = settings.timeoutMs * 2 + 5_000;
  const held: Array<{ group: string; holder: string }> = [];
  const releaseAll = () =>
    Promise.allSettled(held.map(({ group, holder }) => store.limits.releaseSlot(group, holder))).then(() => undefined);

  // A receiver whose pause has ended takes one probe at a time: its other events wait for the probe's outcome.
  if (state && state.failures > settings.breaker.free) {
    const probe = { group: probeGroup(userId, receiver), holder: holderToken(now) };
    const slot = await store.limits.acquireSlot({ ...probe, limit: 1, ttlMs: leaseMs });
    if (!slot.acquired)
      return { kind: "wait", reason: "probing", until: now + Math.round(settings.timeoutMs * (0.5 + random())) };
    held.push(probe);
    // The state read above may predate the last probe's failure (which paused the receiver again before giving the
    // slot back): read it again now that this event holds the probe.
    const current = await store.webhooks.getEndpoint(userId, receiver);
    if (current?.disabledAt !== undefined) {
      await releaseAll();
      return { kind: "disabled", since: current.disabledAt, receiver };
    }
    if (current && current.pausedUntil > now) {
      await releaseAll();
      return { kind: "wait", reason: "paused", until: pausedUntil(current, now, settings.breaker.pauseMs, random()) };
    }
  }
  const share = { group: accountGroup(userId), holder: holderToken(now) };
  const slot = await store.limits.acquireSlot({ ...share, limit: settings.accountConcurrency, ttlMs: leaseMs });
  if (!slot.acquired) {
    await releaseAll();
    return {
      kind: "wait",
      reason: "account",
      until: now + accountWaitMs(slot.holders, now, settings.timeoutMs, random()),
    };
  }
  held.push(share);

  return {
    kind: "go",
    async done({ ok, countsForReceiver, error }) {
      // The receiver's new state is written before the slots are given back: the next probe must find the new pause.
      try {
        if (ok && state) await store.webhooks.clearEndpoint(userId, receiver);
        if (!ok && countsForReceiver) {
          const policy = { ...settings.breaker, jitter: 0.9 + 0.2 * random() };
          await store.webhooks.recordEndpointFailure(userId, {
            receiver,
            url: delivery.url,
            error: error ?? "failed",
            now: Date.now(),
            policy,
          });
        }
      } catch (caught) {
        console.warn(`[webhooks] the receiver's state was not updated (${errorLabel(caught)})`);
      } finally {
        await releaseAll();
      }
    },
  };
}
