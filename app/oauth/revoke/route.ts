import { methodNotAllowed, preflight, withRequest } from "@/lib/http";
import { handleRevocation } from "@/lib/oauth";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";

const methods = ["POST"];

// POST /oauth/revoke – token revocation, RFC 7009 (lib/oauth/endpoints.ts)
export const POST = withRequest(({ req, store }) => handleRevocation(store, req));
export const OPTIONS = preflight(methods);
export const GET = methodNotAllowed(methods);
