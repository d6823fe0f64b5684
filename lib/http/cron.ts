import { timingSafeEqual } from "node:crypto";
import type { Env } from "@/lib/env";
import { ApiError } from "@/lib/api/errors";

/**
 * The scheduled routes (`/api/cron/*`): with `CRON_SECRET` set, only its bearer may run them (Vercel Cron sends
 * `Authorization: Bearer $CRON_SECRET`); without it, only a development server lets anyone. `env`: the request's
 * configuration (`context.env`).
 */
export function authorizeCron(req: Request, env: Pick<Env, "CRON_SECRET" | "NODE_ENV">): void {
  const { CRON_SECRET: secret, NODE_ENV } = env;
  const path = new URL(req.url).pathname;
  if (!secret) {
    if (NODE_ENV === "production") {
      throw new ApiError("unauthorized", `Set CRON_SECRET to run ${path} (Vercel Cron sends it)`);
    }
    return;
  }
  const sent = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1] ?? "";
  const a = Buffer.from(sent);
  const b = Buffer.from(secret);
  if (a.length !== b.length || !timingSafeEqual(a, b))
    throw new ApiError("unauthorized", "Missing or wrong cron secret");
}
