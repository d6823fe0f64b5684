import { methodNotAllowed, preflight, withRequest } from "@/lib/http";
import { handleTokenRequest } from "@/lib/oauth";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";

const methods = ["POST"];

// POST /oauth/token – authorization_code (PKCE) and refresh_token grants (lib/oauth/endpoints.ts)
export const POST = withRequest(({ req, store, env }) => handleTokenRequest(store, env, req));
export const OPTIONS = preflight(methods);
export const GET = methodNotAllowed(methods);
