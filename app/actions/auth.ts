"use server";

// Server actions are POSTs that Next.js accepts only when the Origin header matches the host (its built-in
// CSRF check, see node_modules/next/dist/docs/01-app/02-guides/server-actions.md, "Security"); with the
// SameSite=Lax session cookie that is our CSRF protection.

import { redirect } from "next/navigation";
import { signIn, signUp, type Account } from "@/lib/accounts";
import { endSession, getClientAddress, startSession } from "@/lib/accounts/current";
import { signInReturnPath } from "@/lib/oauth";
import { services } from "@/lib/services";
import { formErrorMessage, type FormError } from "./form-state";

export interface AuthFormState extends FormError {
  /** Echoed back so a failed attempt does not clear the field (never the password). */
  email?: string;
}

async function authenticate(mode: "signin" | "signup", formData: FormData): Promise<AuthFormState> {
  const email = String(formData.get("email") ?? "");
  const password = String(formData.get("password") ?? "");
  let account: Account;
  try {
    const address = await getClientAddress();
    const { store, env, settings } = services();
    account =
      mode === "signup"
        ? await signUp(store, { email, password, address }, { env })
        : await signIn(store, { email, password, address }, settings.accounts);
    await startSession(account.id);
  } catch (error) {
    return { error: formErrorMessage(error, mode), email };
  }
  // Back to the app's authorization page when the sign-in started there (an allow-listed path, never another site).
  redirect(signInReturnPath(formData.get("next")) ?? "/settings"); // outside the try: redirect() works by throwing
}

export async function signInAction(_previous: AuthFormState, formData: FormData): Promise<AuthFormState> {
  return authenticate("signin", formData);
}

export async function signUpAction(_previous: AuthFormState, formData: FormData): Promise<AuthFormState> {
  return authenticate("signup", formData);
}

export async function signOutAction(): Promise<void> {
  try {
    await endSession();
  } catch (error) {
    // The cookie is deleted first, so the browser is signed out either way; the stored session expires.
    console.error("[signout] could not delete the session:", error instanceof Error ? error.message : error);
  }
  redirect("/signin");
}
