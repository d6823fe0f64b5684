import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { signOutAction } from "@/app/actions/auth";
import { revokeKeyAction } from "@/app/actions/keys";
import { getCurrentAccount } from "@/lib/accounts/current";
import { getBalance, getDailyUsage, listLedger } from "@/lib/credits";
import { listJobViews } from "@/lib/jobs";
import { MAX_ACTIVE_KEYS, listApiKeys, type ApiKeyInfo } from "@/lib/keys";
import { getWebhookAccount, listWebhookAttempts } from "@/lib/webhooks";
import { CreateKeyForm } from "./create-key-form";
import { formatDateTime, formatDelta } from "./format";
import { JobsSection } from "./jobs-section";
import { KEY_ID, ledgerHref } from "./ledger-query";
import { UsageChart } from "./usage-chart";
import { WebhooksSection } from "./webhooks-section";

export const metadata: Metadata = { title: "Settings" };

const LEDGER_PAGE = 20;
/** The most recent jobs listed (older ones: `ocr jobs list`, `GET /api/ocr/jobs`). */
const JOBS_SHOWN = 10;
/** Revoked keys listed (most recently revoked first); older ones still name their ledger rows. */
const REVOKED_SHOWN = 20;

type SearchParams = Promise<{ before?: string | string[]; key?: string | string[] }>;

export default async function SettingsPage({ searchParams }: { searchParams: SearchParams }) {
  const account = await getCurrentAccount();
  if (!account) redirect("/signin");
  const params = await searchParams;
  const cursor = typeof params.before === "string" && /^\d+$/.test(params.before) ? params.before : null;
  const requestedKey = typeof params.key === "string" && KEY_ID.test(params.key) ? params.key : null;

  // The keys first: the ledger filter only takes one of this account's keys (revoked ones included).
  const keys = await listApiKeys(account.id);
  const keyFilter = keys.find((key) => key.id === requestedKey) ?? null;
  const [balance, ledger, usage, jobs, webhooks, deliveries] = await Promise.all([
    getBalance(account.id),
    listLedger(account.id, { limit: LEDGER_PAGE, cursor, keyId: keyFilter?.id }),
    getDailyUsage(account.id, { days: 30 }),
    listJobViews(account.id, { limit: JOBS_SHOWN }),
    getWebhookAccount(account.id),
    listWebhookAttempts(account.id),
  ]);
  const keysById = new Map(keys.map((key) => [key.id, key]));
  const active = keys.filter((key) => key.revokedAt === null);
  const revoked = keys.filter((key) => key.revokedAt !== null);
  // What the table and the filter offer: every active key, the most recently revoked ones, and the filtered key.
  const listed = [...active, ...revoked.slice(0, REVOKED_SHOWN)];
  if (keyFilter && !listed.includes(keyFilter)) listed.push(keyFilter);
  const unlisted = keys.length - listed.length;

  return (
    <div className="settings stack-lg">
      <header className="settings-header">
        <div className="settings-who">
          <h1>Settings</h1>
          <p className="muted">
            Signed in as <strong className="account-email">{account.email}</strong>
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
          you no longer use. Up to {MAX_ACTIVE_KEYS} active keys ({active.length} now). Revoked keys stay listed, so
          the activity below can still name them.
        </p>
        <CreateKeyForm />
        {keys.length === 0 ? (
          <p className="muted">No API keys yet.</p>
        ) : (
          <div className="table-wrap">
            <table className="keys-table">
              <caption className="visually-hidden">Your API keys: active ones first, then revoked ones</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Key</th>
                  <th scope="col">Created (UTC)</th>
                  <th scope="col">Last used (UTC)</th>
                  <th scope="col">
                    <span className="visually-hidden">Status and actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {listed.map((key) => (
                  <KeyRow key={key.id} apiKey={key} />
                ))}
              </tbody>
            </table>
          </div>
        )}
        {unlisted > 0 && (
          <p className="hint">
            {unlisted} older revoked key{unlisted === 1 ? " is" : "s are"} not listed; the activity below still names
            them.
          </p>
        )}
      </section>

      <JobsSection jobs={jobs.jobs} more={jobs.nextCursor !== null} />

      <WebhooksSection account={webhooks} attempts={deliveries} />

      <section aria-labelledby="ledger-heading" className="card stack">
        <h2 id="ledger-heading">Recent activity</h2>
        <p className="muted">
          Every credit change. Match a row to a request by its id: the <code>requestId</code> of the answer and its{" "}
          <code>x-request-id</code> header.
        </p>
        <div className="ledger-tools">
          {keys.length > 0 && (
            // A plain GET form: filtering works without JavaScript.
            <form method="get" action="/settings" className="ledger-filter">
              <div className="field">
                <label htmlFor="ledger-key">Key</label>
                <select id="ledger-key" name="key" defaultValue={keyFilter?.id ?? ""}>
                  <option value="">All keys</option>
                  {listed.map((key) => (
                    <option key={key.id} value={key.id}>
                      {key.name} ({key.start}…){key.revokedAt ? " · revoked" : ""}
                    </option>
                  ))}
                </select>
              </div>
              <button type="submit" className="secondary">
                Show
              </button>
            </form>
          )}
          <a className="button secondary" href={`/settings/ledger.csv${keyFilter ? `?key=${keyFilter.id}` : ""}`} download>
            Download CSV{keyFilter ? " of this key" : ""}
          </a>
        </div>
        {ledger.entries.length === 0 ? (
          <p className="muted" data-testid="ledger-empty">
            {!keyFilter
              ? "No credit changes yet."
              : ledger.nextCursor
                ? `No entries of “${keyFilter.name}” in this stretch of the activity; older entries may have some.`
                : `No credit changes with “${keyFilter.name}”${cursor ? " before these" : ""}.`}
          </p>
        ) : (
          <div className="table-wrap" tabIndex={0} role="region" aria-labelledby="ledger-heading">
            <table className="ledger-table">
              <caption className="visually-hidden">
                Credit ledger, newest first{keyFilter ? `, requests with the key “${keyFilter.name}”` : ""}
              </caption>
              <thead>
                <tr>
                  <th scope="col">Time (UTC)</th>
                  <th scope="col" className="num">
                    Change
                  </th>
                  <th scope="col" className="num">
                    Balance after
                  </th>
                  <th scope="col">Reason</th>
                  <th scope="col">Request id</th>
                  <th scope="col">Key</th>
                  <th scope="col">Format</th>
                  <th scope="col" className="num">
                    Pages
                  </th>
                </tr>
              </thead>
              <tbody>
                {ledger.entries.map((entry) => {
                  const key = entry.keyId ? keysById.get(entry.keyId) : undefined;
                  return (
                    <tr key={entry.id} data-request-id={entry.requestId}>
                      <td>
                        <time dateTime={entry.at}>{formatDateTime(entry.at)}</time>
                      </td>
                      <td className={`num ${entry.delta < 0 ? "negative" : "positive"}`}>{formatDelta(entry.delta)}</td>
                      <td className="num">{entry.balanceAfter}</td>
                      <td>{entry.reason}</td>
                      <td>{entry.requestId ? <code className="request-id">{entry.requestId}</code> : <Dash />}</td>
                      <td>
                        {key ? (
                          <>
                            {key.name}
                            {key.revokedAt && <span className="muted"> (revoked)</span>}
                          </>
                        ) : entry.keyId ? (
                          <code>{entry.keyId}</code>
                        ) : (
                          <Dash />
                        )}
                      </td>
                      <td>{entry.format ?? <Dash />}</td>
                      <td className="num">{entry.pages ?? <Dash />}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
        {(cursor || ledger.nextCursor) && (
          <nav aria-label="Ledger pages" className="pager">
            {cursor && <Link href={ledgerHref({ key: keyFilter?.id })}>Newest</Link>}
            {ledger.nextCursor && <Link href={ledgerHref({ key: keyFilter?.id, before: ledger.nextCursor })}>Older entries</Link>}
          </nav>
        )}
      </section>
    </div>
  );
}

function Dash() {
  return <span className="muted">—</span>;
}

/** One key: active ones can be revoked; revoked ones stay, greyed, with when they were revoked. */
function KeyRow({ apiKey: key }: { apiKey: ApiKeyInfo }) {
  return (
    <tr data-key-start={key.start} data-revoked={key.revokedAt ? "true" : undefined} className={key.revokedAt ? "revoked" : undefined}>
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
        {key.revokedAt ? (
          <span className="revoked-at">
            Revoked <time dateTime={key.revokedAt}>{formatDateTime(key.revokedAt)}</time>
          </span>
        ) : (
          // Confirmation without JavaScript: the real button is behind a disclosure.
          <details className="revoke">
            <summary>Revoke</summary>
            <div className="revoke-confirm">
              <p>
                Revoke “{key.name}” (<code>{key.start}…</code>)? Requests using it fail at once. This cannot be
                undone.
              </p>
              <form action={revokeKeyAction}>
                <input type="hidden" name="keyId" value={key.id} />
                <button type="submit" className="danger">
                  Revoke key
                </button>
              </form>
            </div>
          </details>
        )}
      </td>
    </tr>
  );
}
