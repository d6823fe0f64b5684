"use server";

// CSRF: see app/actions/auth.ts. Every action checks the session itself; rendering the form only on the
// settings page is not a security boundary.

import { revalidatePath } from "next/cache";
import { redirect } from "next/navigation";
import { getCurrentAccount } from "@/lib/accounts/current";
import { createApiKey, revokeApiKey } from "@/lib/keys";
import { formErrorMessage, type FormError } from "./form-state";

export interface CreateKeyState extends FormError {
  /** The new key, shown once: it lives only in this response. */
  created?: { key: string; name: string; start: string };
}

async function requireAccount() {
  const account = await getCurrentAccount();
  if (!account) redirect("/signin");
  return account;
}

export async function createKeyAction(_previous: CreateKeyState, formData: FormData): Promise<CreateKeyState> {
  const account = await requireAccount();
  try {
    const { key, info } = await createApiKey({ userId: account.id, name: String(formData.get("name") ?? "") });
    revalidatePath("/settings");
    return { created: { key, name: info.name, start: info.start } };
  } catch (error) {
    return { error: formErrorMessage(error, "create-key") };
  }
}

export async function revokeKeyAction(formData: FormData): Promise<void> {
  const account = await requireAccount();
  // Only the signed-in user's own keys can be revoked: the store checks the key belongs to account.id.
  await revokeApiKey({ userId: account.id, keyId: String(formData.get("keyId") ?? "") });
  revalidatePath("/settings");
}
