import type { WebhookAttempt } from "@/lib/api/schemas";
import type { WebhookAccountView } from "@/lib/webhooks";
import { DataTable, type Column } from "./data-table";
import { formatDateTime } from "./format";
import { SecretForm, TestEventForm, WebhookUrlForm } from "./webhook-forms";

const COLUMNS: Column[] = [
  { label: "Time (UTC)" },
  { label: "Event" },
  { label: "Result" },
  { label: "Latency", className: "num" },
  { label: "Attempt" },
];

/**
 * Webhooks: the signing secret (created, shown once, rotated), the default URL, a test event, and the last delivery
 * attempts of the account's events (job ends and tests).
 */
export function WebhooksSection({ account, attempts }: { account: WebhookAccountView; attempts: WebhookAttempt[] }) {
  return (
    <section id="webhooks" aria-labelledby="webhooks-heading" className="card stack">
      <h2 id="webhooks-heading">Webhooks</h2>
      <p className="muted">
        A job with a <code>webhook</code> (<code>{`"webhook": {"url": "https://…"}`}</code> on <code>POST /api/ocr/jobs</code>,
        or the default URL below) announces its end with a <code>job.succeeded</code>, <code>job.failed</code> or{" "}
        <code>job.cancelled</code> event, signed per Standard Webhooks with this account’s secret. Failed deliveries
        are retried for about a day, with the same <code>webhook-id</code>.
      </p>
      <div className="webhook-secret" data-testid="webhook-secret">
        {account.secretHint ? (
          <p className="hint">
            Signing secret <code>{account.secretHint}</code>
            {account.secretCreatedAt && (
              <>
                , created <time dateTime={account.secretCreatedAt}>{formatDateTime(account.secretCreatedAt)}</time> UTC
              </>
            )}
            {account.previousUntil && (
              <>
                ; the previous one signs too until <time dateTime={account.previousUntil}>{formatDateTime(account.previousUntil)}</time> UTC
              </>
            )}
            .
          </p>
        ) : (
          <p className="hint">No signing secret yet: create one before sending jobs with a webhook.</p>
        )}
      </div>
      <SecretForm hasSecret={account.hasSecret} />
      <WebhookUrlForm defaultUrl={account.defaultUrl} />
      <TestEventForm enabled={account.hasSecret && account.defaultUrl !== null} />
      <h3 id="deliveries-heading">Recent deliveries</h3>
      {attempts.length === 0 ? (
        <p className="muted" data-testid="deliveries-empty">
          No deliveries yet.
        </p>
      ) : (
        <DataTable
          className="deliveries-table"
          caption="The last delivery attempts of this account’s webhook events, newest first"
          columns={COLUMNS}
          labelledBy="deliveries-heading"
        >
          {attempts.map((attempt) => (
            <tr key={`${attempt.eventId}.${attempt.attempt}.${attempt.at}`} data-event-id={attempt.eventId} data-event-type={attempt.type} data-ok={String(attempt.ok)}>
              <td>
                <time dateTime={attempt.at}>{formatDateTime(attempt.at)}</time>
              </td>
              <td>
                {attempt.type}
                {attempt.jobId && (
                  <div className="hint">
                    <code className="request-id">{attempt.jobId}</code>
                  </div>
                )}
              </td>
              <td data-testid="delivery-result">
                <span className={attempt.ok ? "positive" : "negative"}>{attempt.status === null ? "no answer" : `HTTP ${attempt.status}`}</span>
                {attempt.error && attempt.status === null && <div className="hint delivery-error">{attempt.error}</div>}
                {attempt.retrying && <div className="hint">will be retried</div>}
              </td>
              <td className="num">{attempt.latencyMs} ms</td>
              <td>#{attempt.attempt}</td>
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  );
}
