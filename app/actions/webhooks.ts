"use server";

// CSRF: see app/actions/auth.ts. Every action checks the session itself and acts on the signed-in account only.

import { revalidatePath } from "next/cache";
import { redirect } from "next/navigation";
import type { WebhookAttempt } from "@/lib/api/schemas";
import { getCurrentAccount } from "@/lib/accounts/current";
import { enableWebhookReceiver, rotateWebhookSecret, sendTestEvent, setDefaultWebhookUrl } from "@/lib/webhooks";
import { configuredAllowList } from "@/lib/input";
import { services } from "@/lib/services";
import { formErrorMessage, type FormError } from "./form-state";

export interface RotateSecretState extends FormError {
  /** The new signing secret, shown once: it lives only in this response. */
  secret?: string;
  /** It replaced one (which keeps signing for 24 h). */
  rotated?: boolean;
}

export interface WebhookUrlState extends FormError {
  saved?: "set" | "cleared";
}

export interface TestEventState extends FormError {
  attempt?: WebhookAttempt;
}

async function requireAccount() {
  const account = await getCurrentAccount();
  if (!account) redirect("/signin");
  return account;
}

/** Create the signing secret, or rotate it (the old one keeps signing for 24 h). */
export async function rotateSecretAction(_previous: RotateSecretState): Promise<RotateSecretState> {
  const account = await requireAccount();
  try {
    const { secret, view } = await rotateWebhookSecret(services().store, account.id);
    revalidatePath("/settings");
    return { secret, rotated: view.previousUntil !== null };
  } catch (error) {
    return { error: formErrorMessage(error, "rotate-webhook-secret") };
  }
}

/** Set or clear the default webhook URL (checked as a job's `webhook.url`). */
export async function setWebhookUrlAction(_previous: WebhookUrlState, formData: FormData): Promise<WebhookUrlState> {
  const account = await requireAccount();
  try {
    const url = String(formData.get("url") ?? "").slice(0, 2048);
    const view = await setDefaultWebhookUrl(services().store, account.id, url, configuredAllowList(services().env));
    revalidatePath("/settings");
    return { saved: view.defaultUrl ? "set" : "cleared" };
  } catch (error) {
    return { error: formErrorMessage(error, "set-webhook-url") };
  }
}

/** Send a `webhook.test` event to the default URL now, and say how it went (it is in the delivery log too). */
export async function sendTestEventAction(_previous: TestEventState): Promise<TestEventState> {
  const account = await requireAccount();
  try {
    const attempt = await sendTestEvent(services().store, account.id, {
      allowHosts: configuredAllowList(services().env),
    });
    revalidatePath("/settings");
    return { attempt };
  } catch (error) {
    return { error: formErrorMessage(error, "send-test-event") };
  }
}

/**
 * Re-enable one of the account's receivers (disabled after 5 days of failures, or paused): its failures are forgotten
 * and its next event is attempted at once. Only the signed-in account's own receivers: the store keys them by account.
 */
export async function enableReceiverAction(formData: FormData): Promise<void> {
  const account = await requireAccount();
  const receiver = String(formData.get("receiver") ?? "").slice(0, 2048);
  if (receiver) await enableWebhookReceiver(services().store, account.id, receiver);
  revalidatePath("/settings");
}
