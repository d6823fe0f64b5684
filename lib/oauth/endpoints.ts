import OAuth2Server from "@node-oauth/oauth2-server";
import { addressLimitKey, clientAddress, clientAddressOptions } from "@/lib/client-ip";
import type { Env } from "@/lib/env";
import { configuredAllowList } from "@/lib/input";
import type { Store } from "@/lib/store";
import { ALL_SCOPES, oauthUrls, serviceOrigin } from "./config";
import { registerClient } from "./clients";
import { oauthServer } from "./model";
import { OAuthProblem, isOAuthProblem, problemResponse } from "./problem";
import { ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX, hashSecret, isSecret } from "./values";

/*
 * The authorization server's HTTP endpoints as web handlers (app/oauth/* and app/.well-known/* are their routes):
 * token, registration, revocation and the two metadata documents. Their answers are OAuth's (`{ error,
 * error_description }`), not the API's error body: OAuth clients read those fields.
 */

/** Largest form or JSON body read by these endpoints. */
const MAX_BODY_BYTES = 16_384;

/**
 * CORS for the endpoints a browser-based client (the MCP Inspector) calls from its own page: no cookies are involved,
 * each request carries its own credentials, so any origin may call them.
 */
export const OAUTH_CORS: Record<string, string> = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
  "Access-Control-Allow-Headers": "content-type, authorization, mcp-protocol-version",
  "Access-Control-Max-Age": "86400",
};

export function withCors(response: Response): Response {
  const headers = new Headers(response.headers);
  for (const [name, value] of Object.entries(OAUTH_CORS)) headers.set(name, value);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

async function readBody(req: Request): Promise<string> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES)
    throw new OAuthProblem("invalid_request", `The body is larger than ${MAX_BODY_BYTES} bytes`, { status: 413 });
  const text = await req.text();
  if (Buffer.byteLength(text) > MAX_BODY_BYTES)
    throw new OAuthProblem("invalid_request", `The body is larger than ${MAX_BODY_BYTES} bytes`, { status: 413 });
  return text;
}

async function readForm(req: Request): Promise<URLSearchParams> {
  const type = req.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") {
    throw new OAuthProblem(
      "invalid_request",
      "Send the parameters as application/x-www-form-urlencoded (RFC 6749 §3.2)",
    );
  }
  return new URLSearchParams(await readBody(req));
}

async function answer(run: () => Promise<Response>): Promise<Response> {
  try {
    return withCors(await run());
  } catch (error) {
    if (isOAuthProblem(error)) return withCors(problemResponse(error));
    if (error instanceof OAuth2Server.OAuthError) {
      return withCors(
        problemResponse(new OAuthProblem(error.name, error.message, { status: error.code >= 500 ? 500 : error.code })),
      );
    }
    console.error(`[oauth] ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    return withCors(problemResponse(new OAuthProblem("server_error", "The server failed; try again", { status: 500 })));
  }
}

/**
 * `POST /oauth/token`: `authorization_code` (with the PKCE verifier and the same `redirect_uri`) and `refresh_token`
 * (rotated: the old one stops working; presenting it again ends the app's access). A `resource` (RFC 8707), when
 * given, must be this server's MCP endpoint — the only resource its tokens are for.
 */
export function handleTokenRequest(store: Store, env: Env, req: Request): Promise<Response> {
  return answer(async () => {
    const form = await readForm(req);
    const resource = form.get("resource");
    const expected = oauthUrls(serviceOrigin(env, req)).resource;
    if (resource !== null && resource !== expected) {
      throw new OAuthProblem("invalid_target", `Tokens are issued only for ${expected}, not ${resource.slice(0, 200)}`);
    }
    await refuseWiderRefreshScope(store, form);
    const body = Object.fromEntries(form);
    const headers: Record<string, string> = {
      "content-type": "application/x-www-form-urlencoded",
      "content-length": String(form.toString().length),
    };
    // A client that sends Basic credentials gets them checked (and refused: every client here is public).
    const authorization = req.headers.get("authorization");
    if (authorization !== null) headers.authorization = authorization;
    const libraryRequest = new OAuth2Server.Request({ method: "POST", headers, query: {}, body });
    const libraryResponse = new OAuth2Server.Response({});
    const address = addressLimitKey(clientAddress(req.headers, clientAddressOptions(env)));
    await oauthServer(store, configuredAllowList(env), address).token(libraryRequest, libraryResponse);
    return Response.json(libraryResponse.body, { headers: { "Cache-Control": "no-store", Pragma: "no-cache" } });
  });
}

/**
 * A refresh that asks for a scope its grant does not have: `invalid_scope`, before the library runs — it rotates
 * (consumes) the refresh token before it compares the scopes, so the app's next refresh would be a replay and end its
 * whole access (issue 39). The token stays as it was; a narrower or equal scope goes on to the library.
 */
async function refuseWiderRefreshScope(store: Store, form: URLSearchParams): Promise<void> {
  const scope = form.get("scope");
  const refreshToken = form.get("refresh_token");
  if (form.get("grant_type") !== "refresh_token" || scope === null || !refreshToken) return;
  if (!isSecret(refreshToken, REFRESH_TOKEN_PREFIX)) return;
  const found = await store.oauth.findRefreshToken(hashSecret(refreshToken));
  if (found === null || !("record" in found)) return; // unknown or replayed: the library answers (and ends a replay)
  const granted = new Set(found.record.scopes);
  const wider = scope.split(" ").filter((name) => name !== "" && !granted.has(name));
  if (wider.length > 0) {
    throw new OAuthProblem(
      "invalid_scope",
      `The app was granted ${found.record.scopes.join(" ") || "no scope"}, not ${wider.join(" ")}: sign in again to ask for more. The refresh token still works.`,
    );
  }
}

/**
 * `POST /oauth/register`: dynamic client registration (RFC 7591), JSON in and out, `201`. `env` says how the client's
 * address is found (lib/client-ip.ts), which the registrations are limited by.
 */
export function handleRegistration(
  store: Store,
  req: Request,
  env: Pick<Env, "TRUSTED_PROXY_HOPS" | "onVercel">,
): Promise<Response> {
  return answer(async () => {
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch (error) {
      if (isOAuthProblem(error)) throw error;
      throw new OAuthProblem("invalid_client_metadata", "The body is not JSON");
    }
    const client = await registerClient(
      store,
      body,
      clientAddress(req.headers, clientAddressOptions(env)) ?? "unknown",
    );
    return Response.json(client, { status: 201, headers: { "Cache-Control": "no-store" } });
  });
}

/**
 * `POST /oauth/revoke` (RFC 7009): an access token stops working at once; a refresh token ends the app's access (its
 * grant, with every token of it). Always `200` for a well-formed request, known token or not (§2.2). When the request
 * names a `client_id`, only that client's tokens are revoked.
 */
export function handleRevocation(store: Store, req: Request): Promise<Response> {
  return answer(async () => {
    const form = await readForm(req);
    const token = form.get("token");
    if (!token) throw new OAuthProblem("invalid_request", "Missing parameter: token");
    const clientId = form.get("client_id");
    const oauth = store.oauth;
    if (isSecret(token, ACCESS_TOKEN_PREFIX)) {
      const hash = hashSecret(token);
      const record = await oauth.resolveAccessToken(hash, Date.now(), Number.MAX_SAFE_INTEGER);
      if (record && (clientId === null || clientId === record.clientId)) await oauth.deleteAccessToken(hash);
    } else if (isSecret(token, REFRESH_TOKEN_PREFIX)) {
      const found = await oauth.findRefreshToken(hashSecret(token));
      if (found && "record" in found && (clientId === null || clientId === found.record.clientId)) {
        await oauth.revokeGrant(found.record.userId, found.record.grantId);
      }
    }
    return new Response(null, { status: 200, headers: { "Cache-Control": "no-store" } });
  });
}

/** RFC 8414: what a client needs to know of this authorization server. */
export function authorizationServerMetadata(origin: string) {
  const urls = oauthUrls(origin);
  return {
    issuer: urls.issuer,
    authorization_endpoint: urls.authorization,
    token_endpoint: urls.token,
    registration_endpoint: urls.registration,
    revocation_endpoint: urls.revocation,
    scopes_supported: ALL_SCOPES,
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["none"],
    revocation_endpoint_auth_methods_supported: ["none"],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
    service_documentation: urls.documentation,
  };
}

/** RFC 9728: the MCP endpoint as a protected resource, and who issues its tokens. */
export function protectedResourceMetadata(origin: string) {
  const urls = oauthUrls(origin);
  return {
    resource: urls.resource,
    authorization_servers: [urls.issuer],
    scopes_supported: ALL_SCOPES,
    bearer_methods_supported: ["header"],
    resource_name: "OCR service (MCP)",
    resource_documentation: urls.documentation,
  };
}

/** A metadata document's answer: public, cacheable for an hour, and varying with the name it was asked under. */
export function metadataResponse(document: object): Response {
  return withCors(
    Response.json(document, {
      headers: { "Cache-Control": "public, max-age=3600", Vary: "Host, X-Forwarded-Host, X-Forwarded-Proto" },
    }),
  );
}
