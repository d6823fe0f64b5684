"use server";

// CSRF: see app/actions/auth.ts. The action checks the session itself: only the signed-in account's jobs can be
// cancelled (cancelJob answers 404 for another account's).

import { revalidatePath } from "next/cache";
import { redirect } from "next/navigation";
import { getCurrentAccount } from "@/lib/accounts/current";
import { isApiError } from "@/lib/api/errors";
import { afterResponse } from "@/lib/http";
import { cancelJob, kickJobWorkers } from "@/lib/jobs";
import { services } from "@/lib/services";

/** Cancel one of the account's jobs: the pages not read yet are refunded (`DELETE /api/ocr/jobs/{id}` does the same). */
export async function cancelJobAction(formData: FormData): Promise<void> {
  const account = await getCurrentAccount();
  if (!account) redirect("/signin");
  const { store, env, settings, workQueue, deliveries } = services();
  try {
    const view = await cancelJob(
      store,
      env,
      { workQueue, deliveries },
      account.id,
      String(formData.get("jobId") ?? "").slice(0, 100),
    );
    // Its webhook event is queued; on a runner of invocations (Vercel) one is started to deliver it (at the
    // configured origin: never one from the request's Host, lib/service-origin.ts).
    if (view.webhook) afterResponse(() => kickJobWorkers(env, settings.jobs, 1));
  } catch (error) {
    // A job that is gone (expired, or never this account's) has nothing to cancel: the page shows what there is.
    if (!(isApiError(error) && (error.code === "not_found" || error.code === "gone"))) throw error;
  }
  revalidatePath("/settings");
}
