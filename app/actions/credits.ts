"use server";

// CSRF: see app/actions/auth.ts. The action checks the session and the store itself: the button shows only on a
// development server with the embedded store, but that is not the boundary (lib/credits/test-credits.ts is).

import { revalidatePath } from "next/cache";
import { redirect } from "next/navigation";
import { getCurrentAccount } from "@/lib/accounts/current";
import { grantTestCredits } from "@/lib/credits";
import { services } from "@/lib/services";
import { formErrorMessage, type FormError } from "./form-state";

export async function addTestCreditsAction(_previous: FormError, _formData: FormData): Promise<FormError> {
  const account = await getCurrentAccount();
  if (!account) redirect("/signin");
  try {
    await grantTestCredits(services().store, account.id);
  } catch (error) {
    return { error: formErrorMessage(error, "test-credits") };
  }
  revalidatePath("/settings");
  return {};
}
