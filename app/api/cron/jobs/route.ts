import { authorizeCron, methodNotAllowed, withRequest } from "@/lib/http";
import { workJobsFor } from "@/lib/jobs";
import { services } from "@/lib/services";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";
export const maxDuration = 300;

/** What the invocation keeps for itself at the end of `maxDuration`. */
const BUDGET_MARGIN_MS = 30_000;

const methods = ["GET"];

// GET /api/cron/jobs – on a deployment whose job runner is invocations (Vercel): resume the work nobody holds —
// tasks whose invocation ended or died (stalled), and jobs submitted while no invocation could be started. Works the
// queue for this invocation's budget. `Authorization: Bearer $CRON_SECRET`, as Vercel Cron sends it.
export const GET = withRequest(async ({ req, env }) => {
  authorizeCron(req, env);
  const ran = await workJobsFor(maxDuration * 1000 - BUDGET_MARGIN_MS, services().jobWork);
  return Response.json({ success: true, ...ran }, { headers: { "Cache-Control": "no-store" } });
});

export const POST = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);
