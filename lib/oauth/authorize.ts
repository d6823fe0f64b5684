import type { AllowList } from "@/lib/input";
import type { OAuthClientRecord, Store } from "@/lib/store";
import { CODE_TTL_S, SCOPES, oauthUrls, type Scope } from "./config";
import { findClient } from "./clients";
import { grantedScopes, oauthModel } from "./model";
import { isOAuthProblem } from "./problem";

/** A checked authorization request, ready for the consent page. */
export interface AuthorizationRequest {
  client: Pick<OAuthClientRecord, "clientId" | "kind" | "name" | "clientUri">;
  redirectUri: string;
  state: string | null;
  scopes: Scope[];
  resource: string;
  codeChallenge: string;
  /** The request's parameters as checked, for the consent form to send back. */
  params: Record<string, string>;
}

/**
 * What to do with an authorization request: show the consent page; show an error here (the client or its redirect
 * URI cannot be trusted, so nothing is sent to it — RFC 6749 §4.1.2.1); or send the error back to the client.
 */
export type AuthorizationCheck =
  | { kind: "consent"; request: AuthorizationRequest }
  | { kind: "error"; title: string; message: string }
  | { kind: "redirect"; location: string };

const PARAMS = [
  "client_id",
  "redirect_uri",
  "response_type",
  "state",
  "scope",
  "code_challenge",
  "code_challenge_method",
  "resource",
] as const;
/** RFC 7636 §4.2: base64url of a SHA-256 is 43 characters; the ABNF allows 43–128 unreserved characters. */
const CODE_CHALLENGE = /^[A-Za-z0-9._~-]{43,128}$/;

/** The authorization response's redirect with `params`, and `iss` (RFC 9207) so the client knows who answered. */
function redirectTo(redirectUri: string, params: Record<string, string | null>, issuer: string): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) if (value !== null) url.searchParams.set(name, value);
  url.searchParams.set("iss", issuer);
  return url.toString();
}

function single(params: URLSearchParams, name: string): string | null {
  const values = params.getAll(name);
  return values.length === 1 ? values[0]! : null;
}

/**
 * Check an authorization request (`GET /oauth/authorize`, and again when the consent form comes back: its hidden
 * fields are not trusted). Only the authorization code flow with PKCE S256 is served; the token is bound to this
 * server's MCP endpoint (`resource`, RFC 8707; absent means that one); unknown scopes are ignored, none known means all.
 * `allowHosts`: the configuration's `URL_ALLOW_HOSTS`, parsed (`configuredAllowList(env)`): a client's metadata
 * document may be fetched past it.
 */
export async function checkAuthorizationRequest(
  store: Store,
  params: URLSearchParams,
  origin: string,
  allowHosts: AllowList,
): Promise<AuthorizationCheck> {
  const urls = oauthUrls(origin);
  const repeated = PARAMS.filter((name) => params.getAll(name).length > 1);
  const clientId = single(params, "client_id");
  if (!clientId)
    return { kind: "error", title: "Unknown app", message: "The app did not say who it is (client_id is missing)." };
  let client: OAuthClientRecord | null;
  try {
    client = await findClient(store, clientId, allowHosts);
  } catch (error) {
    if (isOAuthProblem(error)) return { kind: "error", title: "This app cannot sign in", message: error.message };
    throw error;
  }
  if (!client) {
    return {
      kind: "error",
      title: "Unknown app",
      message:
        "This app is not registered here (or its registration expired). Remove the server from the app and add it again.",
    };
  }
  const askedRedirect = single(params, "redirect_uri");
  const redirectUri = askedRedirect ?? (client.redirectUris.length === 1 ? client.redirectUris[0]! : null);
  if (redirectUri === null || !client.redirectUris.includes(redirectUri)) {
    return {
      kind: "error",
      title: "Wrong redirect address",
      message: `The app asked to send you back to an address it did not register${askedRedirect ? ` (${askedRedirect.slice(0, 200)})` : ""}. Nothing was sent to it.`,
    };
  }
  const state = single(params, "state");
  const fail = (error: string, description: string): AuthorizationCheck => ({
    kind: "redirect",
    location: redirectTo(redirectUri, { error, error_description: description, state }, urls.issuer),
  });
  if (repeated.length > 0) return fail("invalid_request", `Repeated parameter: ${repeated.join(", ")}`);
  if (single(params, "response_type") !== "code")
    return fail("unsupported_response_type", "Only response_type=code is supported");
  const codeChallenge = single(params, "code_challenge");
  if (!codeChallenge)
    return fail("invalid_request", "PKCE is required: send code_challenge and code_challenge_method=S256");
  if (!CODE_CHALLENGE.test(codeChallenge)) return fail("invalid_request", "code_challenge is malformed (RFC 7636)");
  if (single(params, "code_challenge_method") !== "S256")
    return fail("invalid_request", "code_challenge_method must be S256 (plain is not accepted)");
  const resource = single(params, "resource") ?? urls.resource;
  if (resource !== urls.resource)
    return fail("invalid_target", `Tokens are issued only for ${urls.resource}, not ${resource.slice(0, 200)}`);
  const scopes = grantedScopes(single(params, "scope")?.split(" ").filter(Boolean));

  const checked: Record<string, string> = {
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: "code",
    code_challenge: codeChallenge,
    code_challenge_method: "S256",
    resource,
    scope: scopes.join(" "),
  };
  if (state !== null) checked.state = state;
  return {
    kind: "consent",
    request: {
      client: { clientId: client.clientId, kind: client.kind, name: client.name, clientUri: client.clientUri },
      redirectUri,
      state,
      scopes,
      resource,
      codeChallenge,
      params: checked,
    },
  };
}

/** The consent page's lines for `scopes`. */
export function describeScopes(scopes: readonly Scope[]): string[] {
  return scopes.map((scope) => SCOPES[scope]);
}

/**
 * The user's answer on the consent page: the location to send the browser to — the client's redirect URI with a code
 * (allowed) or `error=access_denied` (denied), `state` and `iss` — or the error page's check when the request no
 * longer holds (checked again from scratch: the form's fields come from the browser).
 */
export async function answerAuthorization(
  store: Store,
  params: URLSearchParams,
  { userId, origin, allowed, allowHosts }: { userId: string; origin: string; allowed: boolean; allowHosts: AllowList },
): Promise<AuthorizationCheck> {
  const check = await checkAuthorizationRequest(store, params, origin, allowHosts);
  if (check.kind !== "consent") return check;
  const { request } = check;
  const issuer = oauthUrls(origin).issuer;
  if (!allowed) {
    return {
      kind: "redirect",
      location: redirectTo(
        request.redirectUri,
        { error: "access_denied", error_description: "The user declined", state: request.state },
        issuer,
      ),
    };
  }
  // The request was checked above, field by field, more strictly than the library's authorize handler would (which
  // also builds its redirect with Node's deprecated url.parse): the code is made and stored by the same model.
  const client = { id: request.client.clientId, redirectUris: [request.redirectUri], grants: ["authorization_code"] };
  const user = { id: userId, resource: request.resource };
  const model = oauthModel(store, allowHosts);
  const authorizationCode = await model.generateAuthorizationCode!(client, user, request.scopes);
  await model.saveAuthorizationCode(
    {
      authorizationCode,
      expiresAt: new Date(Date.now() + CODE_TTL_S * 1000),
      redirectUri: request.redirectUri,
      scope: request.scopes,
      codeChallenge: request.codeChallenge,
      codeChallengeMethod: "S256",
    },
    client,
    user,
  );
  return {
    kind: "redirect",
    location: redirectTo(request.redirectUri, { code: authorizationCode, state: request.state }, issuer),
  };
}
