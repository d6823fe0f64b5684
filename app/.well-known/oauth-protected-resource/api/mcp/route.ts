import { preflight, withRequest } from "@/lib/http";
import { metadataResponse, protectedResourceMetadata, serviceOrigin } from "@/lib/oauth";

export const dynamic = "force-dynamic";

// GET /.well-known/oauth-protected-resource/api/mcp – RFC 9728 §3.1, named in the MCP endpoint's 401 challenge
export const GET = withRequest(async ({ req, env }) =>
  metadataResponse(protectedResourceMetadata(serviceOrigin(env, req))),
);
export const OPTIONS = preflight(["GET"]);
