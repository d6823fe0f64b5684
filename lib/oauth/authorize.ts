import type { AllowList } from "@/lib/input";
import type { OAuthClientRecord, Store } from "@/lib/store";
import { CODE_TTL_S, SCOPES, oauthUrls, type Scope } from "./config";
import { LOOPBACK_HOSTS, findClient, redirectUriProblem } from "./clients";
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
 * What to do with an authorization request: show the consent page; show an error here; or send the browser back to
 * the client. An error is sent back automatically only to a loopback redirect URI (`http://127.0.0.1:…`, the user's
 * own machine): anyone may register any https address or app scheme, and a server that forwards a browser there
 * without a click is an open redirector (RFC 9700 §4.11.2). Elsewhere the error is shown here, with `back`: the
 * client's redirect URI with the error, as a link the user may follow after reading where it goes.
 */
export type AuthorizationCheck =
  | { kind: "consent"; request: AuthorizationRequest }
  | { kind: "error"; title: string; message: string; back?: { href: string; host: string } }
  | { kind: "redirect"; location: string };

/**
 * Whether a browser may be sent to `redirectUri` without the user's click: only a loopback http address (a native
 * app's or CLI's own listener, RFC 8252 §7.3), never an https address or an app's scheme a registration may name.
 */
export function redirectsAutomatically(redirectUri: string): boolean {
  try {
    const url = new URL(redirectUri);
    return url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname);
  } catch {
    return false;
  }
}

/** Where the browser goes back to, as a person recognises it: the host, or the app's own scheme. */
export function describeRedirect(uri: string): string {
  const url = new URL(uri);
  return url.protocol === "http:" || url.protocol === "https:" ? url.host : `${url.protocol}//${url.host}`;
}

/** Send the browser to `location` (on `redirectUri`) when it may go there by itself, else show `title` with a link. */
function backToClient(redirectUri: string, location: string, title: string, message: string): AuthorizationCheck {
  if (redirectsAutomatically(redirectUri)) return { kind: "redirect", location };
  return { kind: "error", title, message, back: { href: location, host: describeRedirect(redirectUri) } };
}

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
 * document may be fetched past it. `address`: the browser's client address (`addressLimitKey`), which fetching a
 * client's metadata document counts against (`findClient`).
 */
export async function checkAuthorizationRequest(
  store: Store,
  params: URLSearchParams,
  origin: string,
  allowHosts: AllowList,
  address?: string,
): Promise<AuthorizationCheck> {
  const urls = oauthUrls(origin);
  const repeated = PARAMS.filter((name) => params.getAll(name).length > 1);
  const clientId = single(params, "client_id");
  if (!clientId)
    return { kind: "error", title: "Unknown app", message: "The app did not say who it is (client_id is missing)." };
  let client: OAuthClientRecord | null;
  try {
    client = await findClient(store, clientId, allowHosts, address);
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
  const uriProblem = redirectUri === null ? null : redirectUriProblem(redirectUri);
  if (redirectUri !== null && uriProblem !== null) {
    // Registered before the schemes were narrowed (issue 39): never sent anywhere.
    return {
      kind: "error",
      title: "Wrong redirect address",
      message: `The app's redirect address is not accepted here (${uriProblem}). Nothing was sent to it.`,
    };
  }
  if (redirectUri === null || !client.redirectUris.includes(redirectUri)) {
    return {
      kind: "error",
      title: "Wrong redirect address",
      message: `The app asked to send you back to an address it did not register${askedRedirect ? ` (${askedRedirect.slice(0, 200)})` : ""}. Nothing was sent to it.`,
    };
  }
  const state = single(params, "state");
  const fail = (error: string, description: string): AuthorizationCheck =>
    backToClient(
      redirectUri,
      redirectTo(redirectUri, { error, error_description: description, state }, urls.issuer),
      "This sign-in request is invalid",
      `${description} (${error}). Nothing was shared with the app.`,
    );
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
 * The answer to "Deny": `error=access_denied` back to the app — by itself only to a loopback redirect URI; otherwise
 * shown here with a link back (the consent page's address may have come from anyone, with any registered address).
 */
export function denyAuthorization(request: AuthorizationRequest, origin: string): AuthorizationCheck {
  return backToClient(
    request.redirectUri,
    redirectTo(
      request.redirectUri,
      { error: "access_denied", error_description: "The user declined", state: request.state },
      oauthUrls(origin).issuer,
    ),
    "Access denied",
    `${request.client.name} was not given access to your account. Nothing was shared with it.`,
  );
}

/**
 * The user's answer on the consent page: the location to send the browser to — the client's redirect URI with a code
 * (allowed) or `error=access_denied` (denied, `denyAuthorization`), `state` and `iss` — or the error page's check when
 * the request no longer holds (checked again from scratch: the form's fields come from the browser).
 */
export async function answerAuthorization(
  store: Store,
  params: URLSearchParams,
  {
    userId,
    origin,
    allowed,
    allowHosts,
    address,
  }: { userId: string; origin: string; allowed: boolean; allowHosts: AllowList; address?: string },
): Promise<AuthorizationCheck> {
  const check = await checkAuthorizationRequest(store, params, origin, allowHosts, address);
  if (check.kind !== "consent") return check;
  const { request } = check;
  const issuer = oauthUrls(origin).issuer;
  if (!allowed) return denyAuthorization(request, origin);
  // The request was checked above, field by field, more strictly than the library's authorize handler would (which
  // also builds its redirect with Node's deprecated url.parse): the code is made and stored by the same model.
  const client = { id: request.client.clientId, redirectUris: [request.redirectUri], grants: ["authorization_code"] };
  const user = { id: userId, resource: request.resource };
  const model = oauthModel(store, allowHosts, address);
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
