import type { Metadata } from "next";
import { headers } from "next/headers";
import Link from "next/link";
import { redirect } from "next/navigation";
import { consentAction } from "@/app/actions/oauth";
import { getCurrentAccount } from "@/lib/accounts/current";
import { addressLimitKey, clientAddress, clientAddressOptions } from "@/lib/client-ip";
import {
  checkAuthorizationRequest,
  denyAuthorization,
  describeRedirect,
  describeScopes,
  serviceOrigin,
  type AuthorizationCheck,
} from "@/lib/oauth";
import { configuredAllowList } from "@/lib/input";
import { services } from "@/lib/services";

export const metadata: Metadata = { title: "Allow access", referrer: "no-referrer" };

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

/**
 * `GET /oauth/authorize`: an MCP client's sign-in (authorization code + PKCE, lib/oauth/authorize.ts). A request
 * that fails is shown here — sent back to the app by itself only to a loopback address (no open redirect); a
 * signed-out browser goes to the sign-in page and comes back; then the consent. `denied=1`: the consent form's "Deny"
 * (app/actions/oauth.ts) when the app's address is not loopback: said here, with a link back. Framing is refused on every page
 * (`frame-ancestors 'none'`, `X-Frame-Options: DENY`), so the buttons cannot be clickjacked.
 */
export default async function AuthorizePage({ searchParams }: { searchParams: SearchParams }) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(await searchParams)) {
    for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) params.append(name, item);
  }
  const { env, store } = services();
  const requestHeaders = await headers();
  const origin = serviceOrigin(env, requestHeaders);
  const address = addressLimitKey(clientAddress(requestHeaders, clientAddressOptions(env)));
  const check = await checkAuthorizationRequest(store, params, origin, configuredAllowList(env), address);
  if (check.kind === "redirect") redirect(check.location);
  if (check.kind === "error") return <ErrorPage check={check} />;
  const { request } = check;
  if (params.get("denied") === "1") {
    const denied = denyAuthorization(request, origin);
    if (denied.kind === "redirect") redirect(denied.location);
    if (denied.kind === "error") return <ErrorPage check={denied} />;
  }
  const account = await getCurrentAccount();
  if (!account) redirect(`/signin?next=${encodeURIComponent(`/oauth/authorize?${params}`)}`);
  const redirectHost = describeRedirect(request.redirectUri);
  return (
    <section className="auth stack" aria-labelledby="consent-heading">
      <h1 id="consent-heading">
        <span className="consent-app">{request.client.name}</span> wants to use your account
      </h1>
      <p className="muted">
        Signed in as <strong>{account.email}</strong> (<Link href="/settings">not you?</Link>)
      </p>
      <div className="card stack">
        <p>It asks to:</p>
        <ul className="consent-scopes">
          {describeScopes(request.scopes).map((line) => (
            <li key={line}>{line}</li>
          ))}
        </ul>
        <p className="hint">
          {request.client.kind === "metadata-document" ? (
            <>
              The app is described at <code>{request.client.clientId}</code>.{" "}
            </>
          ) : (
            <>The app registered itself under this name; check that you started this sign-in. </>
          )}
          You will be sent back to <code>{redirectHost}</code>. Each page it reads costs one credit. You can revoke its
          access at any time under Settings → Connected apps.
        </p>
        <form action={consentAction} className="consent-actions">
          {Object.entries(request.params).map(([name, value]) => (
            <input key={name} type="hidden" name={name} value={value} />
          ))}
          <button type="submit" name="decision" value="allow">
            Allow
          </button>
          <button type="submit" name="decision" value="deny" className="secondary">
            Deny
          </button>
        </form>
      </div>
    </section>
  );
}

/** A request that cannot go on, or a denial: said here; a link back to the app when it may be told (`check.back`). */
function ErrorPage({ check }: { check: Extract<AuthorizationCheck, { kind: "error" }> }) {
  return (
    <section className="auth stack">
      <h1>{check.title}</h1>
      <p role="alert" className="form-error">
        {check.message}
      </p>
      {check.back ? (
        <p className="muted">
          Nothing was shared with the app. You can close this page, or{" "}
          <a href={check.back.href} rel="noreferrer">
            tell the app at {check.back.host}
          </a>
          .
        </p>
      ) : (
        <p className="muted">Nothing was shared with the app. You can close this page.</p>
      )}
    </section>
  );
}
