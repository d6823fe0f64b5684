import type { Metadata } from "next";
import { headers } from "next/headers";
import Link from "next/link";
import { redirect } from "next/navigation";
import { consentAction } from "@/app/actions/oauth";
import { getCurrentAccount } from "@/lib/accounts/current";
import { checkAuthorizationRequest, describeScopes, serviceOrigin } from "@/lib/oauth";
import { configuredAllowList } from "@/lib/input";
import { services } from "@/lib/services";

export const metadata: Metadata = { title: "Allow access", referrer: "no-referrer" };

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

/**
 * `GET /oauth/authorize`: an MCP client's sign-in (authorization code + PKCE, lib/oauth/authorize.ts). A request
 * that fails before its redirect URI is trusted is shown here; later failures go back to the app; a signed-out
 * browser goes to the sign-in page and comes back; then the consent. Framing is refused on every page
 * (`frame-ancestors 'none'`, `X-Frame-Options: DENY`), so the buttons cannot be clickjacked.
 */
export default async function AuthorizePage({ searchParams }: { searchParams: SearchParams }) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(await searchParams)) {
    for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) params.append(name, item);
  }
  const check = await checkAuthorizationRequest(
    services().store,
    params,
    serviceOrigin(services().env, await headers()),
    configuredAllowList(services().env),
  );
  if (check.kind === "redirect") redirect(check.location);
  if (check.kind === "error") {
    return (
      <section className="auth stack">
        <h1>{check.title}</h1>
        <p role="alert" className="form-error">
          {check.message}
        </p>
        <p className="muted">Nothing was shared with the app. You can close this page.</p>
      </section>
    );
  }
  const account = await getCurrentAccount();
  if (!account) redirect(`/signin?next=${encodeURIComponent(`/oauth/authorize?${params}`)}`);
  const { request } = check;
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

/** Where the browser goes back to, as a person recognises it: the host, or the app's own scheme. */
function describeRedirect(uri: string): string {
  const url = new URL(uri);
  return url.protocol === "http:" || url.protocol === "https:" ? url.host : `${url.protocol}//${url.host}`;
}
