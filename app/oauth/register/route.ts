import { methodNotAllowed, preflight, withRequest } from "@/lib/http";
import { handleRegistration } from "@/lib/oauth";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";

const methods = ["POST"];

// POST /oauth/register – dynamic client registration, RFC 7591 (lib/oauth/clients.ts)
export const POST = withRequest(({ req, store, env }) => handleRegistration(store, req, env));
export const OPTIONS = preflight(methods);
export const GET = methodNotAllowed(methods);
