import { preflight, withRequest } from "@/lib/http";
import { metadataResponse, protectedResourceMetadata, serviceOrigin } from "@/lib/oauth";

export const dynamic = "force-dynamic";

// GET /.well-known/oauth-protected-resource – RFC 9728, for clients that probe the root; the same document as the
// path-scoped one (api/mcp/route.ts): the MCP endpoint is this server's only protected resource.
export const GET = withRequest(async ({ req, env }) =>
  metadataResponse(protectedResourceMetadata(serviceOrigin(env, req))),
);
export const OPTIONS = preflight(["GET"]);
