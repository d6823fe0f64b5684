import { timingSafeEqual } from "node:crypto";
import { sweepExpiredReservations } from "@/lib/credits";
import { getEnv } from "@/lib/env";
import { ApiError } from "@/lib/errors";
import { methodNotAllowed, withRequest } from "@/lib/http";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";
export const maxDuration = 60;

const methods = ["GET"];

// GET /api/cron/reservations – refund reservations whose instance died before settling them (vercel.json schedules
// it; every keyed request also sweeps now and then). `Authorization: Bearer $CRON_SECRET`, as Vercel Cron sends it.
export const GET = withRequest(async ({ req }) => {
  authorize(req);
  const result = await sweepExpiredReservations();
  return Response.json({ success: true, ...result }, { headers: { "Cache-Control": "no-store" } });
});

export const POST = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);

/** With `CRON_SECRET` set, only its bearer may run the sweep; without it, only a development server lets anyone. */
function authorize(req: Request): void {
  const { CRON_SECRET: secret, NODE_ENV } = getEnv();
  if (!secret) {
    if (NODE_ENV === "production") {
      throw new ApiError("unauthorized", "Set CRON_SECRET to run /api/cron/reservations (Vercel Cron sends it)");
    }
    return;
  }
  const sent = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1] ?? "";
  const a = Buffer.from(sent);
  const b = Buffer.from(secret);
  if (a.length !== b.length || !timingSafeEqual(a, b)) throw new ApiError("unauthorized", "Missing or wrong cron secret");
}
