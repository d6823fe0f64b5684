import { ApiError } from "@/lib/api/errors";
import { afterResponse, methodNotAllowed, withRequest } from "@/lib/http";
import { acceptWorkCall, workJobsFor } from "@/lib/jobs";
import { services } from "@/lib/services";

export const runtime = "nodejs";
export const maxDuration = 300;

/** What an invocation keeps for itself at the end of `maxDuration` (its last page's answer, the store's writes). */
const BUDGET_MARGIN_MS = 30_000;

const methods = ["POST"];

// POST /api/internal/jobs/work – signed by the deployment itself (CRON_SECRET, single-use): work the job queue for this
// invocation's budget. Answered 202 at once; the work goes on after the answer (on Vercel, `after`).
export const POST = withRequest(async ({ req, store }) => {
  const { env, jobWork } = services();
  const secret = env.CRON_SECRET;
  // Each signature is accepted once, within a minute of its making: a captured one cannot be replayed.
  if (!secret || !(await acceptWorkCall(store, req.headers.get("x-work-signature"), secret))) {
    throw new ApiError("unauthorized", "This route is called by the service itself");
  }
  afterResponse(async () => {
    const ran = await workJobsFor(maxDuration * 1000 - BUDGET_MARGIN_MS, jobWork);
    if (ran.documents + ran.pages > 0)
      console.info(`[jobs] invocation worked ${ran.documents} documents, ${ran.pages} pages`);
  });
  return new Response(null, { status: 202 });
});

export const GET = methodNotAllowed(methods);
