import { createHash, randomBytes } from "node:crypto";
import { http, HttpResponse } from "msw";
import { describe, expect, it, vi } from "vitest";
import { createMcpRoute } from "@/lib/mcp";
import { answerAuthorization, checkAuthorizationRequest, listConnectedApps, revokeConnectedApp } from "@/lib/oauth";
import { CLIENT_METADATA_FETCHES_PER_ADDRESS_PER_HOUR, REGISTRATIONS_PER_ADDRESS_PER_HOUR } from "@/lib/oauth/config";
import { getEnv } from "@/lib/env";
import { configuredAllowList } from "@/lib/input";
import { getStore } from "@/lib/store";
import { createAccount, withRemoteFiles, withStore } from "../api/support";
import { readEvents } from "../mcp/support";
import { MCP_URL, ORIGIN, REDIRECT_URL, postForm, serviceFetch } from "./support";

/*
 * What the authorization server and the protected resource refuse, on the real Redis store: a wrong redirect_uri, a
 * replayed code, a missing or `plain` PKCE challenge, a token for another resource, an expired or revoked token, a
 * client metadata document on a private address, a registration flood, a scope the token lacks.
 */

const remote = withRemoteFiles();
withStore("redis");

const verifier = () => randomBytes(32).toString("base64url");
const challengeOf = (value: string) => createHash("sha256").update(value).digest("base64url");

/** A client address of its own for each registration: the file registers more than one address may in an hour. */
let registrations = 0;
const nextAddress = () => `192.0.2.${(registrations++ % 250) + 1}`;

async function register(redirectUris = [REDIRECT_URL]): Promise<string> {
  const response = await serviceFetch()(`${ORIGIN}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": nextAddress() },
    body: JSON.stringify({ client_name: "refusal tests", redirect_uris: redirectUris }),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { client_id: string }).client_id;
}

function authorizeParams(
  clientId: string,
  extra: Record<string, string | null> = {},
  codeVerifier = verifier(),
): URLSearchParams {
  const params = new URLSearchParams({
    client_id: clientId,
    redirect_uri: REDIRECT_URL,
    response_type: "code",
    state: "s1",
    code_challenge: challengeOf(codeVerifier),
    code_challenge_method: "S256",
    resource: MCP_URL,
  });
  for (const [name, value] of Object.entries(extra)) {
    if (value === null) params.delete(name);
    else params.set(name, value);
  }
  return params;
}

/** A code for `userId`, allowed on the consent page, and the verifier that redeems it. */
async function codeFor(userId: string, clientId: string, extra: Record<string, string | null> = {}) {
  const codeVerifier = verifier();
  const answer = await answerAuthorization(getStore(), authorizeParams(clientId, extra, codeVerifier), {
    userId,
    origin: ORIGIN,
    allowed: true,
    allowHosts: configuredAllowList(getEnv()),
  });
  if (answer.kind !== "redirect") throw new Error(JSON.stringify(answer));
  const code = new URL(answer.location).searchParams.get("code");
  if (!code) throw new Error(`no code: ${answer.location}`);
  return { code, codeVerifier };
}

function redeem(clientId: string, code: string, codeVerifier: string, extra: Record<string, string> = {}) {
  return postForm("/oauth/token", {
    grant_type: "authorization_code",
    client_id: clientId,
    code,
    code_verifier: codeVerifier,
    redirect_uri: REDIRECT_URL,
    resource: MCP_URL,
    ...extra,
  });
}

async function tokensFor(userId: string, clientId: string, scope?: string) {
  const { code, codeVerifier } = await codeFor(userId, clientId, scope ? { scope } : {});
  const response = await redeem(clientId, code, codeVerifier);
  expect(response.status).toBe(200);
  return (await response.json()) as { access_token: string; refresh_token: string; scope: string; expires_in: number };
}

function mcp(token: string, body: unknown = { jsonrpc: "2.0", id: 1, method: "tools/list" }, url = MCP_URL) {
  return serviceFetch()(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function expectInvalidToken(response: Response, description: RegExp): Promise<void> {
  expect(response.status).toBe(401);
  const challenge = response.headers.get("www-authenticate") ?? "";
  expect(challenge).toContain('error="invalid_token"');
  expect(challenge).toMatch(description);
  expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(description);
}

async function expectRedirectError(params: URLSearchParams, error: string, description: RegExp): Promise<void> {
  const check = await checkAuthorizationRequest(getStore(), params, ORIGIN, configuredAllowList(getEnv()));
  if (check.kind !== "redirect") throw new Error(`expected a redirect, got ${JSON.stringify(check)}`);
  const location = new URL(check.location);
  expect(location.origin + location.pathname).toBe(REDIRECT_URL);
  expect(location.searchParams.get("error")).toBe(error);
  expect(location.searchParams.get("error_description")).toMatch(description);
  expect(location.searchParams.get("iss")).toBe(ORIGIN);
  expect(location.searchParams.get("state")).toBe("s1");
  expect(location.searchParams.has("code")).toBe(false);
}

describe("the authorization endpoint refuses", () => {
  it("a redirect_uri the client did not register: shown on our page, nothing sent to it", async () => {
    const clientId = await register();
    for (const redirect of [
      "http://127.0.0.1:8976/oauth/callback/x",
      "http://127.0.0.1:8977/oauth/callback",
      "https://evil.example/cb",
    ]) {
      const check = await checkAuthorizationRequest(
        getStore(),
        authorizeParams(clientId, { redirect_uri: redirect }),
        ORIGIN,
        configuredAllowList(getEnv()),
      );
      expect(check).toMatchObject({ kind: "error", title: "Wrong redirect address" });
    }
    expect(
      await checkAuthorizationRequest(
        getStore(),
        authorizeParams("ocl_unknown"),
        ORIGIN,
        configuredAllowList(getEnv()),
      ),
    ).toMatchObject({
      kind: "error",
      title: "Unknown app",
    });
  });

  it("a missing PKCE challenge, or the plain method", async () => {
    const clientId = await register();
    await expectRedirectError(
      authorizeParams(clientId, { code_challenge: null }),
      "invalid_request",
      /PKCE is required/,
    );
    await expectRedirectError(
      authorizeParams(clientId, { code_challenge_method: "plain" }),
      "invalid_request",
      /must be S256/,
    );
    await expectRedirectError(
      authorizeParams(clientId, { code_challenge_method: null }),
      "invalid_request",
      /must be S256/,
    );
    await expectRedirectError(
      authorizeParams(clientId, { response_type: "token" }),
      "unsupported_response_type",
      /code/,
    );
  });

  it("a token for another resource", async () => {
    const clientId = await register();
    await expectRedirectError(
      authorizeParams(clientId, { resource: "https://other.example/mcp" }),
      "invalid_target",
      /only for http:\/\/localhost:3000\/api\/mcp/,
    );
  });

  it("a Client ID Metadata Document on a private address (the imageUrl SSRF guard), or one naming another client", async () => {
    const privateDocument = "https://intranet.example/oauth/client.json";
    const check = await checkAuthorizationRequest(
      getStore(),
      authorizeParams(privateDocument),
      ORIGIN,
      configuredAllowList(getEnv()),
    );
    expect(check).toMatchObject({ kind: "error", title: "This app cannot sign in" });
    expect(check.kind === "error" && check.message).toMatch(/private|not allowed|public/i);

    const liar = "https://files.example/oauth/liar.json";
    remote.use(
      http.get(liar, () =>
        HttpResponse.json({ client_id: "https://files.example/other.json", redirect_uris: [REDIRECT_URL] }),
      ),
    );
    expect(
      await checkAuthorizationRequest(getStore(), authorizeParams(liar), ORIGIN, configuredAllowList(getEnv())),
    ).toMatchObject({
      kind: "error",
      message: expect.stringMatching(/names another client_id/),
    });
  });

  it("denied on the consent page: access_denied back to the app, no code", async () => {
    const account = await createAccount(0);
    const clientId = await register();
    const answer = await answerAuthorization(getStore(), authorizeParams(clientId), {
      userId: account.userId,
      origin: ORIGIN,
      allowed: false,
      allowHosts: configuredAllowList(getEnv()),
    });
    if (answer.kind !== "redirect") throw new Error("expected a redirect");
    const location = new URL(answer.location);
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.has("code")).toBe(false);
  });
});

describe("the token endpoint refuses", () => {
  it("a replayed code — and the tokens the first redemption got stop working", async () => {
    const account = await createAccount(0);
    const clientId = await register();
    const { code, codeVerifier } = await codeFor(account.userId, clientId);
    const first = await redeem(clientId, code, codeVerifier);
    expect(first.status).toBe(200);
    const { access_token } = (await first.json()) as { access_token: string };
    expect((await mcp(access_token)).status).toBe(200);

    const replay = await redeem(clientId, code, codeVerifier);
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ error: "invalid_grant" });
    await expectInvalidToken(await mcp(access_token), /unknown, expired or revoked/);
  });

  it("a wrong verifier (and the code is spent), a wrong redirect_uri, another client, another resource", async () => {
    const account = await createAccount(0);
    const clientId = await register();
    const other = await register();

    const spent = await codeFor(account.userId, clientId);
    const wrongVerifier = await redeem(clientId, spent.code, verifier());
    expect(await wrongVerifier.json()).toMatchObject({ error: "invalid_grant" });
    expect(await (await redeem(clientId, spent.code, spent.codeVerifier)).json()).toMatchObject({
      error: "invalid_grant",
    });

    const a = await codeFor(account.userId, clientId);
    expect(
      await (await redeem(clientId, a.code, a.codeVerifier, { redirect_uri: "http://127.0.0.1:8976/other" })).json(),
    ).toMatchObject({ error: "invalid_request" });
    const b = await codeFor(account.userId, clientId);
    expect(await (await redeem(other, b.code, b.codeVerifier)).json()).toMatchObject({ error: "invalid_grant" });
    const c = await codeFor(account.userId, clientId);
    const wrongResource = await redeem(clientId, c.code, c.codeVerifier, { resource: "https://other.example/mcp" });
    expect(wrongResource.status).toBe(400);
    expect(await wrongResource.json()).toMatchObject({ error: "invalid_target" });
  });

  it("an expired code (60 s)", async () => {
    const account = await createAccount(0);
    const clientId = await register();
    const { code, codeVerifier } = await codeFor(account.userId, clientId);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 61_000 });
    try {
      expect(await (await redeem(clientId, code, codeVerifier)).json()).toMatchObject({ error: "invalid_grant" });
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("the MCP endpoint refuses", () => {
  it("a token for another resource: issued for this host, presented under another name", async () => {
    const account = await createAccount(0);
    const { access_token } = await tokensFor(account.userId, await register());
    expect((await mcp(access_token)).status).toBe(200);
    const elsewhere = await (
      await import("@/app/api/mcp/route")
    ).POST(
      new Request("http://127.0.0.1:3000/api/mcp", {
        method: "POST",
        headers: { authorization: `Bearer ${access_token}`, "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
      }),
    );
    await expectInvalidToken(elsewhere, /issued for another resource \(http:\/\/localhost:3000\/api\/mcp\)/);
  });

  it("an expired token (one hour), and a revoked one (RFC 7009)", async () => {
    const account = await createAccount(0);
    const clientId = await register();
    const { access_token, expires_in } = await tokensFor(account.userId, clientId);
    expect(expires_in).toBeGreaterThan(3_590);
    expect(expires_in).toBeLessThanOrEqual(3_600);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 3_601_000 });
    try {
      await expectInvalidToken(await mcp(access_token), /unknown, expired or revoked/);
    } finally {
      vi.useRealTimers();
    }
    const fresh = await tokensFor(account.userId, clientId);
    expect((await mcp(fresh.access_token)).status).toBe(200);
    expect((await postForm("/oauth/revoke", { token: fresh.access_token, client_id: clientId })).status).toBe(200);
    await expectInvalidToken(await mcp(fresh.access_token), /unknown, expired or revoked/);
    // A malformed one costs no lookup and says so.
    await expectInvalidToken(await mcp("oat_short"), /malformed/);
  });

  it("REST keeps API keys: an access token there is refused, saying where it works", async () => {
    const account = await createAccount(1);
    const { access_token } = await tokensFor(account.userId, await register());
    const { POST } = await import("@/app/api/ocr/process/route");
    const response = await POST(
      new Request(`${ORIGIN}/api/ocr/process`, {
        method: "POST",
        headers: { authorization: `Bearer ${access_token}`, "content-type": "application/json" },
        body: JSON.stringify({ imageUrl: "https://files.example/x.png" }),
      }),
    );
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(
      /OAuth access tokens work only on \/api\/mcp/,
    );
    expect(await account.balance()).toBe(1);
  });

  it("a call the token's scopes do not allow: 403 insufficient_scope, naming the scope to ask for", async () => {
    const account = await createAccount(0);
    const { access_token, scope } = await tokensFor(account.userId, await register(), "documents:read");
    expect(scope).toBe("documents:read");
    expect((await mcp(access_token, { jsonrpc: "2.0", id: 1, method: "tools/list" })).status).toBe(200);
    const refused = await mcp(access_token, { jsonrpc: "2.0", id: 2, method: "tasks/list", params: {} });
    expect(refused.status).toBe(403);
    const challenge = refused.headers.get("www-authenticate") ?? "";
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="documents:read jobs:manage"');
  });
});

describe("revoking a connected app", () => {
  it("closes an SSE stream its token opened at the stream's next refresh; its reconnect is refused with invalid_token", async () => {
    const account = await createAccount(0);
    const { access_token } = await tokensFor(account.userId, await register());
    const handlers = createMcpRoute({ sse: { pingMs: 60_000, refreshMs: 100 } });
    const get = () =>
      handlers.GET(
        new Request(MCP_URL, { headers: { accept: "text/event-stream", authorization: `Bearer ${access_token}` } }),
      );
    const response = await get();
    expect(response.status).toBe(200);
    const events = readEvents(response);
    try {
      expect((await events.next())?.event).toBe("endpoint");
      // While the app is connected the stream stays open through its refreshes (each checks the grant).
      const next = events.next();
      expect(
        await Promise.race([next.then(() => "event"), new Promise((resolve) => setTimeout(resolve, 600, "open"))]),
      ).toBe("open");
      const [app] = await listConnectedApps(getStore(), account.userId);
      expect(await revokeConnectedApp(getStore(), { userId: account.userId, grantId: app!.id })).toBe(true);
      // Without the revocation the stream would stay open for its 295 s.
      expect(await next).toEqual({ comment: "closed: the API key of this session was revoked" });
      expect(await events.next()).toBeNull();
      await expectInvalidToken(await get(), /unknown, expired or revoked/);
    } finally {
      await events.cancel();
    }
  });
});

describe("no open redirect (issue 39, point 13)", () => {
  const HTTPS_REDIRECT = "https://app.example/oauth/cb";

  it("an error for an https redirect URI is shown here with a link back, not sent there by itself", async () => {
    const clientId = await register([HTTPS_REDIRECT]);
    const check = await checkAuthorizationRequest(
      getStore(),
      authorizeParams(clientId, { redirect_uri: HTTPS_REDIRECT, response_type: "token" }),
      ORIGIN,
      configuredAllowList(getEnv()),
    );
    if (check.kind !== "error") throw new Error(`expected the error shown here, got ${JSON.stringify(check)}`);
    expect(check.message).toMatch(/response_type=code/);
    const back = new URL(check.back!.href);
    expect(back.origin + back.pathname).toBe(HTTPS_REDIRECT);
    expect(back.searchParams.get("error")).toBe("unsupported_response_type");
    expect(check.back!.host).toBe("app.example");
  });

  it("Deny: back to a loopback address by itself, to an https address only by the user's click", async () => {
    const account = await createAccount(0);
    const deny = (clientId: string, redirect: string) =>
      answerAuthorization(getStore(), authorizeParams(clientId, { redirect_uri: redirect }), {
        userId: account.userId,
        origin: ORIGIN,
        allowed: false,
        allowHosts: configuredAllowList(getEnv()),
      });
    expect(await deny(await register(), REDIRECT_URL)).toMatchObject({ kind: "redirect" });
    const shown = await deny(await register([HTTPS_REDIRECT]), HTTPS_REDIRECT);
    if (shown.kind !== "error") throw new Error(`expected the denial shown here, got ${JSON.stringify(shown)}`);
    expect(shown.title).toBe("Access denied");
    expect(new URL(shown.back!.href).searchParams.get("error")).toBe("access_denied");
  });

  it("registration refuses the schemes operating systems hand to their own handlers; accepts the apps' own", async () => {
    for (const uri of [
      "ms-msdt:/id PCWDiagnostic",
      "search-ms:query=x&crumb=location:\\\\evil.example\\share",
      "smb://evil.example/share",
      "ms-settings:privacy",
      "mailto:a@example.com",
      "someapp:/callback",
    ]) {
      const response = await serviceFetch()(`${ORIGIN}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": nextAddress() },
        body: JSON.stringify({ redirect_uris: [uri] }),
      });
      expect(response.status, uri).toBe(400);
      expect(await response.json()).toMatchObject({ error: "invalid_redirect_uri" });
    }
    expect(
      await register([
        "cursor://anysphere.cursor-mcp/oauth/callback",
        "vscode://vscode.mcp/callback",
        "com.example.app:/oauth/callback",
        "https://claude.ai/api/mcp/auth_callback",
      ]),
    ).toMatch(/^ocl_/);
  });

  it("a client registered before with such a scheme is never sent there", async () => {
    const clientId = `ocl_${randomBytes(12).toString("base64url")}`;
    await getStore().oauth.saveClient(
      {
        clientId,
        kind: "registered",
        name: "old",
        redirectUris: ["ms-msdt:/id"],
        clientUri: null,
        createdAt: new Date().toISOString(),
      },
      60_000,
    );
    const check = await checkAuthorizationRequest(
      getStore(),
      authorizeParams(clientId, { redirect_uri: "ms-msdt:/id", response_type: "token" }),
      ORIGIN,
      configuredAllowList(getEnv()),
    );
    expect(check).toMatchObject({ kind: "error", title: "Wrong redirect address" });
    expect(check.kind === "error" && check.back).toBeFalsy();
  });
});

describe("a refresh asking for a wider scope (issue 39, point 16)", () => {
  it("is refused with invalid_scope, and the app's access goes on", async () => {
    const account = await createAccount(0);
    const clientId = await register();
    const { refresh_token } = await tokensFor(account.userId, clientId, "documents:read");
    const wider = await postForm("/oauth/token", {
      grant_type: "refresh_token",
      client_id: clientId,
      refresh_token,
      scope: "documents:read jobs:manage",
    });
    expect(wider.status).toBe(400);
    expect(await wider.json()).toMatchObject({ error: "invalid_scope" });
    const again = await postForm("/oauth/token", { grant_type: "refresh_token", client_id: clientId, refresh_token });
    expect(again.status).toBe(200);
    const { access_token, scope } = (await again.json()) as { access_token: string; scope: string };
    expect(scope).toBe("documents:read");
    expect((await mcp(access_token)).status).toBe(200);
    expect(await listConnectedApps(getStore(), account.userId)).toHaveLength(1);
  });
});

describe("Client ID Metadata Document lookups (issue 39, point 12)", () => {
  const check = (clientId: string, address: string) =>
    checkAuthorizationRequest(getStore(), authorizeParams(clientId), ORIGIN, configuredAllowList(getEnv()), address);

  it("an http client_id is told a metadata document must be https", async () => {
    expect(await check("http://files.example/oauth/app.json", "198.51.100.20")).toMatchObject({
      kind: "error",
      message: expect.stringMatching(/must be https/),
    });
  });

  it("are limited per client address; a cached document costs nothing; a query or a dot segment is no document", async () => {
    let fetches = 0;
    remote.use(
      http.get("https://files.example/apps/:name", ({ request }) => {
        fetches += 1;
        return HttpResponse.json({ client_id: request.url, client_name: "Doc app", redirect_uris: [REDIRECT_URL] });
      }),
    );
    const address = `198.51.100.${Math.floor(Math.random() * 200) + 30}`;
    const run = randomBytes(4).toString("hex");
    for (const id of [`https://files.example/apps/${run}.json?x=1`, `https://files.example/apps/../${run}.json`]) {
      expect(await check(id, address)).toMatchObject({ kind: "error", title: "This app cannot sign in" });
    }
    expect(fetches).toBe(0);
    const first = `https://files.example/apps/${run}-0.json`;
    expect(await check(first, address)).toMatchObject({ kind: "consent" });
    expect(await check(first, address)).toMatchObject({ kind: "consent" });
    expect(fetches).toBe(1);
    for (let n = 1; n < CLIENT_METADATA_FETCHES_PER_ADDRESS_PER_HOUR; n++)
      expect(await check(`https://files.example/apps/${run}-${n}.json`, address)).toMatchObject({ kind: "consent" });
    expect(fetches).toBe(CLIENT_METADATA_FETCHES_PER_ADDRESS_PER_HOUR);
    const refused = await check(`https://files.example/apps/${run}-over.json`, address);
    expect(refused).toMatchObject({ kind: "error", message: expect.stringMatching(/Too many app lookups/) });
    expect(fetches).toBe(CLIENT_METADATA_FETCHES_PER_ADDRESS_PER_HOUR);
    // Another address still may; the cached ones are still served to this one.
    expect(await check(`https://files.example/apps/${run}-over.json`, `${address}1`)).toMatchObject({
      kind: "consent",
    });
    expect(await check(first, address)).toMatchObject({ kind: "consent" });
  });
});

describe("registration (RFC 7591) refuses", () => {
  it("redirect URIs that are not https, loopback http or an app's own scheme", async () => {
    for (const uri of ["http://evil.example/cb", "javascript:alert(1)", "https://app.example/cb#frag", "not a url"]) {
      const response = await serviceFetch()(`${ORIGIN}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": nextAddress() },
        body: JSON.stringify({ redirect_uris: [uri] }),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: "invalid_redirect_uri" });
    }
    expect(
      await register(["cursor://anysphere.cursor-mcp/oauth/callback", "https://claude.ai/api/mcp/auth_callback"]),
    ).toMatch(/^ocl_/);
  });

  it(`a flood: more than ${REGISTRATIONS_PER_ADDRESS_PER_HOUR} registrations an hour from one address`, async () => {
    const send = () =>
      serviceFetch()(`${ORIGIN}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": "198.51.100.7" },
        body: JSON.stringify({ redirect_uris: [REDIRECT_URL] }),
      });
    const statuses: number[] = [];
    for (let i = 0; i <= REGISTRATIONS_PER_ADDRESS_PER_HOUR; i++) statuses.push((await send()).status);
    expect(statuses.filter((status) => status === 201).length).toBeLessThanOrEqual(REGISTRATIONS_PER_ADDRESS_PER_HOUR);
    const refused = await send();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await refused.json()).toMatchObject({ error: "rate_limited" });
  });
});
