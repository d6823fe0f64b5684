"use server";

// CSRF: see app/actions/auth.ts. Every action checks the session itself; rendering the form only on the
// settings page is not a security boundary.

import { revalidatePath } from "next/cache";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { requestOrigin } from "@/lib/http";
import { getCurrentAccount } from "@/lib/accounts/current";
import { createApiKey, revokeApiKey } from "@/lib/keys";
import { services } from "@/lib/services";
import { formErrorMessage, type FormError } from "./form-state";

/** Stands in for this server's origin in the snippets when the request's Host is unusable (see requestOrigin). */
const PLACEHOLDER_ORIGIN = "https://ocr.example.com";

export interface CreateKeyState extends FormError {
  /**
   * The new key, shown once: it lives only in this response (with the "try it" snippets built from it). `origin` is
   * this server's, from the request's headers, for those snippets.
   */
  created?: { key: string; name: string; start: string; origin: string };
}

async function requireAccount() {
  const account = await getCurrentAccount();
  if (!account) redirect("/signin");
  return account;
}

export async function createKeyAction(_previous: CreateKeyState, formData: FormData): Promise<CreateKeyState> {
  const account = await requireAccount();
  try {
    const { key, info } = await createApiKey(services().store, {
      userId: account.id,
      name: String(formData.get("name") ?? ""),
    });
    revalidatePath("/settings");
    const origin = requestOrigin(await headers()) ?? PLACEHOLDER_ORIGIN;
    return { created: { key, name: info.name, start: info.start, origin } };
  } catch (error) {
    return { error: formErrorMessage(error, "create-key") };
  }
}

export async function revokeKeyAction(formData: FormData): Promise<void> {
  const account = await requireAccount();
  // Only the signed-in user's own keys can be revoked: the store checks the key belongs to account.id.
  await revokeApiKey(services().store, { userId: account.id, keyId: String(formData.get("keyId") ?? "") });
  revalidatePath("/settings");
}
