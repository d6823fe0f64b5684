import { checkHealth, healthStatusCode } from "@/lib/health";
import { methodNotAllowed, preflight, withRequest } from "@/lib/http";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";
export const maxDuration = 60;

const methods = ["GET", "HEAD"];

// GET /api/health – store reachable, OCR engine ready; `?deep=1` also reads built-in samples end to end. No key.
export const GET = withRequest(async (context) => {
  const deep = ["1", "true", "yes"].includes(new URL(context.req.url).searchParams.get("deep") ?? "");
  // The store is read inside the check (not here): one that cannot be built is reported, not a 500.
  const body = await checkHealth(() => context.store, { deep, env: context.env, pool: context.pool });
  return Response.json(body, { status: healthStatusCode(body), headers: { "Cache-Control": "no-store" } });
});

export const HEAD = GET;
export const OPTIONS = preflight(methods);
export const POST = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);
