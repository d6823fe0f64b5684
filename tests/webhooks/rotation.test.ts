import { describe, expect, it } from "vitest";
import { getStore } from "@/lib/store";
import { MAX_REPLACED_SECRETS, rotateWebhookSecret, signingSecrets } from "@/lib/webhooks";
import { createAccount, withStore } from "../api/support";

/*
 * Issue 29, point 6: rotating the webhook secret twice within 24 h dropped the oldest at once, though the docs promise
 * every replaced secret 24 h of signing beside the new one. Each replaced secret now keeps its own 24 h.
 */

const HOUR = 3_600_000;

describe.each(["redis", "memory"] as const)("webhook secret rotations (%s store)", (kind) => {
  withStore(kind);

  it("rotated twice within a day: the first secret still signs until 24 h after its own replacement", async () => {
    const { userId } = await createAccount(0);
    const t0 = Date.now();
    const first = (await rotateWebhookSecret(getStore(), userId, t0)).secret;
    const second = (await rotateWebhookSecret(getStore(), userId, t0 + 1 * HOUR)).secret;
    const third = (await rotateWebhookSecret(getStore(), userId, t0 + 2 * HOUR)).secret;
    const account = await getStore().webhooks.getAccount(userId);
    expect(signingSecrets(account, t0 + 2 * HOUR)).toEqual([third, second, first]);
    // The first was replaced at t0 + 1 h: it signs until t0 + 25 h; the second until t0 + 26 h.
    expect(signingSecrets(account, t0 + 25 * HOUR - 1)).toEqual([third, second, first]);
    expect(signingSecrets(account, t0 + 25 * HOUR + 1)).toEqual([third, second]);
    expect(signingSecrets(account, t0 + 26 * HOUR + 1)).toEqual([third]);
  });

  it("a rotation after a day lets the expired ones go; rotating many times keeps at most the newest few", async () => {
    const { userId } = await createAccount(0);
    const t0 = Date.now();
    const secrets: string[] = [];
    for (let i = 0; i < MAX_REPLACED_SECRETS + 3; i++)
      secrets.push((await rotateWebhookSecret(getStore(), userId, t0 + i * 60_000)).secret);
    const now = t0 + secrets.length * 60_000;
    const signing = signingSecrets(await getStore().webhooks.getAccount(userId), now);
    expect(signing).toEqual(secrets.slice(-(MAX_REPLACED_SECRETS + 1)).reverse());
    const later = (await rotateWebhookSecret(getStore(), userId, now + 30 * HOUR)).secret;
    expect(signingSecrets(await getStore().webhooks.getAccount(userId), now + 30 * HOUR)).toEqual([
      later,
      secrets.at(-1),
    ]);
  });
});
