import { methodNotAllowed, preflight, withRequest } from "@/lib/http";
import { handleRegistration } from "@/lib/oauth";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";
// A configuration of its own (Vercel groups routes of equal memory and maxDuration into one function): the OAuth
// endpoints read no document, and must not share the engine routes' ~180 MB function and its cold starts
// (docs/deploy.md#oauth). A token request takes a few store round trips, or one client metadata fetch (5 s at most).
export const maxDuration = 15;

const methods = ["POST"];

// POST /oauth/register – dynamic client registration, RFC 7591 (lib/oauth/clients.ts)
export const POST = withRequest(({ req, store, env }) => handleRegistration(store, req, env));
export const OPTIONS = preflight(methods);
export const GET = methodNotAllowed(methods);
