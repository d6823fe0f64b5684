import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { AllowList } from "@/lib/input";
import type { Store, WebhookAccount } from "@/lib/store";
import { webhookSettings } from "./settings";
import { checkWebhookUrl } from "./url";

/** What the settings page shows of an account's webhooks: never a whole secret after it was shown once. */
export interface WebhookAccountView {
  hasSecret: boolean;
  /** `whsec_` and the first characters, to tell secrets apart. */
  secretHint: string | null;
  secretCreatedAt: string | null;
  /** Until when the secret before the last rotation still signs (null when none does). */
  previousUntil: string | null;
  defaultUrl: string | null;
}

/** A new signing secret: `whsec_` and 32 random bytes in base64 (Standard Webhooks' format). */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

export function secretHint(secret: string): string {
  return `${secret.slice(0, 12)}…`;
}

/** Most replaced secrets that keep signing at once (each for its 24 h): rotating more often drops the oldest. */
export const MAX_REPLACED_SECRETS = 4;

const replacedSchema = z.array(z.object({ secret: z.string().startsWith("whsec_"), until: z.number().int() }));

/** The secrets replaced by rotations that are still in their 24 h of grace, newest first. */
function replacedSecrets(account: WebhookAccount, now: number): Array<{ secret: string; until: number }> {
  const previous =
    account.previousSecret && account.previousUntil !== undefined
      ? [{ secret: account.previousSecret, until: account.previousUntil }]
      : [];
  let older: Array<{ secret: string; until: number }> = [];
  try {
    older = replacedSchema.parse(JSON.parse(account.olderSecrets ?? "[]"));
  } catch {
    older = [];
  }
  return [...previous, ...older].filter((entry) => entry.until > now).slice(0, MAX_REPLACED_SECRETS);
}

/**
 * The secrets a delivery is signed with now: the current one, and each one a rotation replaced during its 24 h of
 * grace — also when it was rotated again within the day (each replaced secret keeps its own 24 h).
 */
export function signingSecrets(account: WebhookAccount, now = Date.now()): string[] {
  if (!account.secret) return [];
  return [account.secret, ...replacedSecrets(account, now).map((entry) => entry.secret)];
}

function toView(account: WebhookAccount, now = Date.now()): WebhookAccountView {
  const previousActive = account.previousSecret && (account.previousUntil ?? 0) > now;
  return {
    hasSecret: Boolean(account.secret),
    secretHint: account.secret ? secretHint(account.secret) : null,
    secretCreatedAt: account.secretCreatedAt !== undefined ? new Date(account.secretCreatedAt).toISOString() : null,
    previousUntil: previousActive ? new Date(account.previousUntil!).toISOString() : null,
    defaultUrl: account.defaultUrl ?? null,
  };
}

export async function getWebhookAccount(store: Store, userId: string): Promise<WebhookAccountView> {
  return toView(await store.webhooks.getAccount(userId));
}

/**
 * Create the account's signing secret, or rotate it: the new one signs from now on, and the one it replaces keeps
 * signing beside it for 24 h (both signatures in `webhook-signature`), so receivers can switch without losing an
 * event. Returns the new secret: the only time it is shown.
 */
export async function rotateWebhookSecret(
  store: Store,
  userId: string,
  now = Date.now(),
): Promise<{ secret: string; view: WebhookAccountView }> {
  const webhooks = store.webhooks;
  const account = await webhooks.getAccount(userId);
  const secret = newSigningSecret();
  // The replaced one signs for 24 h from now; the ones replaced before it keep the rest of their own 24 h.
  const older = replacedSecrets(account, now).slice(0, MAX_REPLACED_SECRETS - 1);
  const previous = account.secret
    ? {
        previousSecret: account.secret,
        previousUntil: now + webhookSettings().previousSecretMs,
        ...(older.length > 0 && { olderSecrets: JSON.stringify(older) }),
      }
    : {};
  await webhooks.setSecrets(userId, { secret, secretCreatedAt: now, ...previous });
  return { secret, view: toView({ ...account, secret, secretCreatedAt: now, ...previous }, now) };
}

/**
 * Set the account's default webhook URL (checked as a job's is), or clear it with an empty value. `allowHosts`: the
 * configuration's `URL_ALLOW_HOSTS`, parsed (`configuredAllowList(env)`).
 */
export async function setDefaultWebhookUrl(
  store: Store,
  userId: string,
  url: string | null,
  allowHosts: AllowList,
): Promise<WebhookAccountView> {
  const value = url?.trim() ? await checkWebhookUrl(url.trim(), { field: "The webhook URL", allowHosts }) : null;
  await store.webhooks.setDefaultUrl(userId, value);
  return getWebhookAccount(store, userId);
}
