import { revokeKeyAction } from "@/app/actions/keys";
import { MAX_ACTIVE_KEYS, type ApiKeyInfo } from "@/lib/keys";
import { CreateKeyForm } from "./create-key-form";
import { ConfirmAction, DataTable, type Column } from "./data-table";
import { formatDateTime } from "./format";

const COLUMNS: Column[] = [
  { label: "Name" },
  { label: "Key" },
  { label: "Created (UTC)" },
  { label: "Last used (UTC)" },
  { label: "Status and actions", hidden: true },
];

/**
 * The account's API keys: the form that creates one, and the listed keys (active ones first, then the most recently
 * revoked); `unlisted` older revoked keys are only counted.
 */
export function KeysSection({
  listed,
  activeCount,
  unlisted,
}: {
  listed: ApiKeyInfo[];
  activeCount: number;
  unlisted: number;
}) {
  return (
    <section aria-labelledby="keys-heading" className="card stack">
      <h2 id="keys-heading">API keys</h2>
      <p className="muted">
        Send a key in the <code>x-api-key</code> header. Each key has full access to this account; revoke any you no
        longer use. Up to {MAX_ACTIVE_KEYS} active keys ({activeCount} now). Revoked keys stay listed, so the activity
        below can still name them.
      </p>
      <CreateKeyForm />
      {listed.length === 0 ? (
        <p className="muted">No API keys yet.</p>
      ) : (
        <DataTable
          className="keys-table"
          caption="Your API keys: active ones first, then revoked ones"
          columns={COLUMNS}
        >
          {listed.map((key) => (
            <KeyRow key={key.id} apiKey={key} />
          ))}
        </DataTable>
      )}
      {unlisted > 0 && (
        <p className="hint">
          {unlisted} older revoked key{unlisted === 1 ? " is" : "s are"} not listed; the activity below still names
          them.
        </p>
      )}
    </section>
  );
}

/** One key: active ones can be revoked; revoked ones stay, greyed, with when they were revoked. */
function KeyRow({ apiKey: key }: { apiKey: ApiKeyInfo }) {
  return (
    <tr
      data-key-start={key.start}
      data-revoked={key.revokedAt ? "true" : undefined}
      className={key.revokedAt ? "revoked" : undefined}
    >
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
          <ConfirmAction summary="Revoke" button="Revoke key" action={revokeKeyAction} name="keyId" value={key.id}>
            Revoke “{key.name}” (<code>{key.start}…</code>)? Requests using it fail at once. This cannot be undone.
          </ConfirmAction>
        )}
      </td>
    </tr>
  );
}
