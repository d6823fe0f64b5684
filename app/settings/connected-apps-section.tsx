import { revokeAppAction } from "@/app/actions/oauth";
import type { ConnectedApp } from "@/lib/oauth";
import { ConfirmAction, DataTable, type Column } from "./data-table";
import { formatDateTime } from "./format";

const COLUMNS: Column[] = [
  { label: "App" },
  { label: "Allowed to" },
  { label: "Authorized (UTC)" },
  { label: "Last used (UTC)" },
  { label: "Actions", hidden: true },
];

/**
 * The apps this account signed in to with OAuth (claude.ai, ChatGPT, Cursor, VS Code…: docs/mcp.md#sign-in-with-oauth),
 * with what they may do and when they last did; revoking one ends its tokens at once and closes its open streams.
 */
export function ConnectedAppsSection({ apps }: { apps: ConnectedApp[] }) {
  return (
    <section aria-labelledby="apps-heading" className="card stack">
      <h2 id="apps-heading">Connected apps</h2>
      <p className="muted">
        Apps you allowed to use this account by signing in from them, instead of with an API key. They spend your
        credits like a key does.
      </p>
      {apps.length === 0 ? (
        <p className="muted">No connected apps.</p>
      ) : (
        <DataTable className="apps-table" caption="Apps with access to this account" columns={COLUMNS}>
          {apps.map((app) => (
            <tr key={app.id} data-app-id={app.id}>
              <td>
                {app.name}
                {app.host && <span className="hint"> ({app.host})</span>}
              </td>
              <td>
                <code>{app.scopes.join(" ")}</code>
              </td>
              <td>
                <time dateTime={app.createdAt}>{formatDateTime(app.createdAt)}</time>
              </td>
              <td>
                {app.lastUsedAt ? (
                  <time dateTime={app.lastUsedAt}>{formatDateTime(app.lastUsedAt)}</time>
                ) : (
                  <span className="muted">Never</span>
                )}
              </td>
              <td>
                <ConfirmAction
                  summary="Revoke"
                  button="Revoke access"
                  action={revokeAppAction}
                  name="grantId"
                  value={app.id}
                >
                  Revoke “{app.name}”? Its requests fail at once and its open connections close; it has to sign in
                  again.
                </ConfirmAction>
              </td>
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  );
}
