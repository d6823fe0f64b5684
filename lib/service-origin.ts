import type { Env } from "@/lib/env";

/*
 * The service's own origin, from configuration only. A request's `Host` (and `X-Forwarded-Host`, and the URL Next.js
 * builds from them) is whatever the client sent: a call built from it can be sent anywhere, signature and
 * `x-vercel-protection-bypass` included (issue 29, point 4).
 */

type OriginSettings = Pick<Env, "SERVICE_URL" | "PORT" | "VERCEL_URL" | "VERCEL_PROJECT_PRODUCTION_URL" | "VERCEL_ENV">;

/** `SERVICE_URL` when the operator set it (an origin, checked by lib/env.ts), else null. */
export function configuredOrigin(env: Pick<Env, "SERVICE_URL">): string | null {
  return env.SERVICE_URL ?? null;
}

/**
 * Where the service calls itself (the internal work route, lib/jobs/workers.ts): `SERVICE_URL`; else on Vercel the
 * platform's name of this deployment — the production URL in production (a production domain is not behind
 * Deployment Protection's Standard Protection), the deployment's own URL elsewhere (a preview calls itself, with the
 * bypass secret); else the address a self-hosted server listens on, `http://127.0.0.1:$PORT`.
 */
export function selfOrigin(env: OriginSettings): string {
  const configured = configuredOrigin(env);
  if (configured) return configured;
  const production = env.VERCEL_ENV === "production" ? env.VERCEL_PROJECT_PRODUCTION_URL : undefined;
  const vercel = production ?? env.VERCEL_URL ?? env.VERCEL_PROJECT_PRODUCTION_URL;
  if (vercel) return `https://${vercel.replace(/^https?:\/\//, "").replace(/\/.*$/, "")}`;
  return `http://127.0.0.1:${env.PORT}`;
}
