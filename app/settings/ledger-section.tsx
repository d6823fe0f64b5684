import Link from "next/link";
import type { LedgerEntry, LedgerPage } from "@/lib/credits";
import type { ApiKeyInfo } from "@/lib/keys";
import { Dash, DataTable, type Column } from "./data-table";
import { formatDateTime, formatDelta } from "./format";
import { ledgerHref } from "./ledger-query";

const COLUMNS: Column[] = [
  { label: "Time (UTC)" },
  { label: "Change", className: "num" },
  { label: "Balance after", className: "num" },
  { label: "Reason" },
  { label: "Request id" },
  { label: "Key" },
  { label: "Format" },
  { label: "Pages", className: "num" },
];

/**
 * Every credit change, newest first, a page at a time (`cursor`: the page's start, null for the newest), filtered to
 * one key when `keyFilter` is set; `keys` are those the filter offers, `keysById` every key of the account (a row
 * names its key, revoked or not).
 */
export function LedgerSection({
  ledger,
  cursor,
  keys,
  keysById,
  appNames,
  keyFilter,
}: {
  ledger: LedgerPage;
  cursor: string | null;
  keys: ApiKeyInfo[];
  keysById: Map<string, ApiKeyInfo>;
  /** The names of the account's connected apps by grant id: OAuth calls are charged under their grant's id. */
  appNames?: Map<string, string>;
  keyFilter: ApiKeyInfo | null;
}) {
  return (
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
                {keys.map((key) => (
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
        <a
          className="button secondary"
          href={`/settings/ledger.csv${keyFilter ? `?key=${keyFilter.id}` : ""}`}
          download
        >
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
        <DataTable
          className="ledger-table"
          caption={`Credit ledger, newest first${keyFilter ? `, requests with the key “${keyFilter.name}”` : ""}`}
          columns={COLUMNS}
          labelledBy="ledger-heading"
        >
          {ledger.entries.map((entry) => (
            <LedgerRow
              key={entry.id}
              entry={entry}
              apiKey={entry.keyId ? keysById.get(entry.keyId) : undefined}
              appName={entry.keyId ? appNames?.get(entry.keyId) : undefined}
            />
          ))}
        </DataTable>
      )}
      {(cursor || ledger.nextCursor) && (
        <nav aria-label="Ledger pages" className="pager">
          {cursor && <Link href={ledgerHref({ key: keyFilter?.id })}>Newest</Link>}
          {ledger.nextCursor && (
            <Link href={ledgerHref({ key: keyFilter?.id, before: ledger.nextCursor })}>Older entries</Link>
          )}
        </nav>
      )}
    </section>
  );
}

function LedgerRow({
  entry,
  apiKey: key,
  appName,
}: {
  entry: LedgerEntry;
  apiKey: ApiKeyInfo | undefined;
  appName?: string;
}) {
  return (
    <tr data-request-id={entry.requestId}>
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
        ) : appName ? (
          <>
            {appName} <span className="muted">(app)</span>
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
}
