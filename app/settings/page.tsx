import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { signOutAction } from "@/app/actions/auth";
import { revokeKeyAction } from "@/app/actions/keys";
import { getCurrentAccount } from "@/lib/accounts/current";
import { getBalance, getDailyUsage, listLedger } from "@/lib/credits";
import { MAX_ACTIVE_KEYS, listApiKeys } from "@/lib/keys";
import { CreateKeyForm } from "./create-key-form";
import { formatDateTime, formatDelta } from "./format";
import { UsageChart } from "./usage-chart";

export const metadata: Metadata = { title: "Settings" };

const LEDGER_PAGE = 20;

export default async function SettingsPage({ searchParams }: { searchParams: Promise<{ before?: string | string[] }> }) {
  const account = await getCurrentAccount();
  if (!account) redirect("/signin");
  const before = (await searchParams).before;
  const cursor = typeof before === "string" && /^\d+$/.test(before) ? before : null;

  const [keys, balance, ledger, usage] = await Promise.all([
    listApiKeys(account.id),
    getBalance(account.id),
    listLedger(account.id, { limit: LEDGER_PAGE, cursor }),
    getDailyUsage(account.id, { days: 30 }),
  ]);

  return (
    <div className="settings stack-lg">
      <header className="settings-header">
        <div>
          <h1>Settings</h1>
          <p className="muted">
            Signed in as <strong>{account.email}</strong>
          </p>
        </div>
        <form action={signOutAction}>
          <button type="submit" className="secondary">
            Sign out
          </button>
        </form>
      </header>

      <section aria-labelledby="credits-heading" className="card stack">
        <h2 id="credits-heading">Credits</h2>
        <p className="balance">
          <span className="balance-value" data-testid="balance">
            {balance}
          </span>{" "}
          credits left <span className="muted">· one credit per page read</span>
        </p>
        <UsageChart usage={usage} />
      </section>

      <section aria-labelledby="keys-heading" className="card stack">
        <h2 id="keys-heading">API keys</h2>
        <p className="muted">
          Send a key in the <code>x-api-key</code> header. Each key has full access to this account; revoke any
          you no longer use. Up to {MAX_ACTIVE_KEYS} active keys.
        </p>
        <CreateKeyForm />
        {keys.length === 0 ? (
          <p className="muted">No API keys yet.</p>
        ) : (
          <div className="table-wrap">
            <table className="keys-table">
              <caption className="visually-hidden">Your active API keys</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Key</th>
                  <th scope="col">Created (UTC)</th>
                  <th scope="col">Last used (UTC)</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.map((key) => (
                  <tr key={key.id} data-key-start={key.start}>
                    <td>{key.name}</td>
                    <td>
                      <code>{key.start}…</code>
                    </td>
                    <td>
                      <time dateTime={key.createdAt}>{formatDateTime(key.createdAt)}</time>
                    </td>
                    <td>
                      {key.lastUsedAt ? (
                        <time dateTime={key.lastUsedAt}>{formatDateTime(key.lastUsedAt)}</time>
                      ) : (
                        <span className="muted">Never</span>
                      )}
                    </td>
                    <td>
                      {/* Confirmation without JavaScript: the real button is behind a disclosure. */}
                      <details className="revoke">
                        <summary>Revoke</summary>
                        <div className="revoke-confirm">
                          <p>
                            Revoke “{key.name}” (<code>{key.start}…</code>)? Requests using it fail at once. This
                            cannot be undone.
                          </p>
                          <form action={revokeKeyAction}>
                            <input type="hidden" name="keyId" value={key.id} />
                            <button type="submit" className="danger">
                              Revoke key
                            </button>
                          </form>
                        </div>
                      </details>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section aria-labelledby="ledger-heading" className="card stack">
        <h2 id="ledger-heading">Recent activity</h2>
        {ledger.entries.length === 0 ? (
          <p className="muted">No credit changes yet.</p>
        ) : (
          <div className="table-wrap">
            <table className="ledger-table">
              <caption className="visually-hidden">Credit ledger, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Time (UTC)</th>
                  <th scope="col" className="num">
                    Change
                  </th>
                  <th scope="col">Reason</th>
                  <th scope="col" className="num">
                    Pages
                  </th>
                  <th scope="col" className="num">
                    Balance after
                  </th>
                </tr>
              </thead>
              <tbody>
                {ledger.entries.map((entry) => (
                  <tr key={entry.id}>
                    <td>
                      <time dateTime={entry.at}>{formatDateTime(entry.at)}</time>
                    </td>
                    <td className={`num ${entry.delta < 0 ? "negative" : "positive"}`}>{formatDelta(entry.delta)}</td>
                    <td>{entry.reason}</td>
                    <td className="num">{entry.pages ?? "—"}</td>
                    <td className="num">{entry.balanceAfter}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {(cursor || ledger.nextCursor) && (
          <nav aria-label="Ledger pages" className="pager">
            {cursor && <Link href="/settings">Newest</Link>}
            {ledger.nextCursor && <Link href={`/settings?before=${ledger.nextCursor}`}>Older entries</Link>}
          </nav>
        )}
      </section>
    </div>
  );
}
