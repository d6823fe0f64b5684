import { preflight, withRequest } from "@/lib/http";
import { authorizationServerMetadata, metadataResponse, serviceOrigin } from "@/lib/oauth";

export const dynamic = "force-dynamic";

// GET /.well-known/oauth-authorization-server – RFC 8414 (the issuer is the origin, so no path is inserted)
export const GET = withRequest(async ({ req, env }) =>
  metadataResponse(authorizationServerMetadata(serviceOrigin(env, req))),
);
export const OPTIONS = preflight(["GET"]);
