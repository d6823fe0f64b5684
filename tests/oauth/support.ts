import type { OAuthClientMetadata, OAuthClientProvider } from "@modelcontextprotocol/client";
import * as asMetadataRoute from "@/app/.well-known/oauth-authorization-server/route";
import * as prmPathRoute from "@/app/.well-known/oauth-protected-resource/api/mcp/route";
import * as prmRootRoute from "@/app/.well-known/oauth-protected-resource/route";
import * as mcpRoute from "@/app/api/mcp/route";
import * as registerRoute from "@/app/oauth/register/route";
import * as revokeRoute from "@/app/oauth/revoke/route";
import * as tokenRoute from "@/app/oauth/token/route";

/** The service's origin in the in-process tests (route handlers called with `new Request(…)`). */
export const ORIGIN = "http://localhost:3000";
export const MCP_URL = `${ORIGIN}/api/mcp`;

type Handler = (req: Request) => Promise<Response>;
const ROUTES: Record<string, Partial<Record<string, Handler>>> = {
  "/api/mcp": { GET: mcpRoute.GET, POST: mcpRoute.POST },
  "/oauth/token": { POST: tokenRoute.POST },
  "/oauth/register": { POST: registerRoute.POST },
  "/oauth/revoke": { POST: revokeRoute.POST },
  "/.well-known/oauth-protected-resource/api/mcp": { GET: prmPathRoute.GET },
  "/.well-known/oauth-protected-resource": { GET: prmRootRoute.GET },
  "/.well-known/oauth-authorization-server": { GET: asMetadataRoute.GET },
};

/** What went over the wire: method, path and status of every request a client made. */
export type Wire = string[];

/** A `fetch` that serves this service's routes in process (404 for any other path), logging each exchange. */
export function serviceFetch(wire: Wire = []) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const handler = url.origin === ORIGIN ? ROUTES[url.pathname]?.[request.method] : undefined;
    const response = handler ? await handler(request) : new Response("not found", { status: 404 });
    wire.push(`${request.method} ${url.pathname} ${response.status}`);
    return response;
  };
}

/** POST a form to one of the OAuth endpoints. */
export function postForm(
  path: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return serviceFetch()(`${ORIGIN}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

export const REDIRECT_URL = "http://127.0.0.1:8976/oauth/callback";

/**
 * An in-memory `OAuthClientProvider` as an app implements it: it keeps what the SDK gives it, and "opens the browser"
 * by recording the authorization URL (the test then answers the consent itself, or drives Chromium there).
 */
export class MemoryProvider implements OAuthClientProvider {
  clientInfo: Awaited<ReturnType<NonNullable<OAuthClientProvider["clientInformation"]>>>;
  saved: Awaited<ReturnType<OAuthClientProvider["tokens"]>>;
  verifier = "";
  authorizationUrls: URL[] = [];
  readonly clientMetadataUrl?: string;

  constructor(options: { clientMetadataUrl?: string; redirectUrl?: string; scope?: string } = {}) {
    this.clientMetadataUrl = options.clientMetadataUrl;
    this.redirect = options.redirectUrl ?? REDIRECT_URL;
    this.scope = options.scope;
  }
  private readonly redirect: string;
  private readonly scope: string | undefined;

  get redirectUrl(): string {
    return this.redirect;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      redirect_uris: [this.redirect],
      client_name: "OAuth test app",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      ...(this.scope && { scope: this.scope }),
    };
  }
  state(): string {
    return "state-123";
  }
  clientInformation() {
    return this.clientInfo;
  }
  saveClientInformation(info: NonNullable<MemoryProvider["clientInfo"]>) {
    this.clientInfo = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: NonNullable<MemoryProvider["saved"]>) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrls.push(url);
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}
