import { afterResponse, methodNotAllowed, preflight, withApiKey } from "@/lib/http";
import { jobIdFromPath, retryAfterFor } from "@/lib/http/jobs";
import { cancelJob, getJobView, kickJobWorkers } from "@/lib/jobs";

export const runtime = "nodejs";

/** Polling a job counts against the key's reads, not its requests. */
const READS = { limit: "reads" } as const;

const methods = ["GET", "DELETE"];

// GET /api/ocr/jobs/{id} – status and progress (Retry-After while it runs)
export const GET = withApiKey(async ({ req, account, store, env, pool, deliveries }) => {
  const view = await getJobView(store, env, deliveries, account.userId, jobIdFromPath(req));
  const retryAfter = retryAfterFor(view, pool);
  return Response.json(view, retryAfter ? { headers: { "Retry-After": String(retryAfter) } } : undefined);
}, READS);

// DELETE /api/ocr/jobs/{id} – cancel: the pages not read yet are refunded
export const DELETE = withApiKey(async (context) => {
  const { req, account, report, store, env, settings } = context;
  const view = await cancelJob(store, env, context, account.userId, jobIdFromPath(req));
  report({ replayable: true });
  // Its webhook event is queued; on a runner of invocations (Vercel) one is started to deliver it.
  if (view.webhook) afterResponse(() => kickJobWorkers(env, settings.jobs, 1));
  return Response.json(view);
});

export const OPTIONS = preflight(methods);
export const HEAD = methodNotAllowed(methods);
export const POST = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
