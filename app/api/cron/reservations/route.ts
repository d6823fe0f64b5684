import { sweepExpiredReservations } from "@/lib/credits";
import { authorizeCron, methodNotAllowed, withRequest } from "@/lib/http";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";
export const maxDuration = 60;

const methods = ["GET"];

// GET /api/cron/reservations – refund reservations whose instance died before settling them (vercel.json schedules
// it; every keyed request also sweeps now and then). `Authorization: Bearer $CRON_SECRET`, as Vercel Cron sends it.
export const GET = withRequest(async ({ req, store, env }) => {
  authorizeCron(req, env);
  const result = await sweepExpiredReservations(store);
  return Response.json({ success: true, ...result }, { headers: { "Cache-Control": "no-store" } });
});

export const POST = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);
