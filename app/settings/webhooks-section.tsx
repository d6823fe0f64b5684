import { enableReceiverAction } from "@/app/actions/webhooks";
import type { WebhookAttempt } from "@/lib/api/schemas";
import type { WebhookAccountView, WebhookReceiverView } from "@/lib/webhooks";
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
 * Webhooks: the signing secret (created, shown once, rotated), the default URL, a test event, the receivers that are
 * failing (paused, disabled: re-enable), and the last delivery attempts of the account's events (job ends and tests).
 */
export function WebhooksSection({
  account,
  attempts,
  receivers,
}: {
  account: WebhookAccountView;
  attempts: WebhookAttempt[];
  receivers: WebhookReceiverView[];
}) {
  return (
    <section id="webhooks" aria-labelledby="webhooks-heading" className="card stack">
      <h2 id="webhooks-heading">Webhooks</h2>
      <p className="muted">
        A job with a <code>webhook</code> (<code>{`"webhook": {"url": "https://…"}`}</code> on{" "}
        <code>POST /api/ocr/jobs</code>, or the default URL below) announces its end with a <code>job.succeeded</code>,{" "}
        <code>job.failed</code> or <code>job.cancelled</code> event (none for a job cancelled before any page was read),
        signed per Standard Webhooks with this account’s secret. Failed deliveries are retried for about a day, with the
        same <code>webhook-id</code>. A receiver that fails 5 deliveries in a row is paused: its events wait (1 minute,
        doubling up to 6 hours) and one is tried after each pause. One that fails every delivery for 5 days is{" "}
        <strong>disabled</strong>: its events are dropped until you re-enable it below (or a test event to it gets
        through).
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
                ; the previous one signs too until{" "}
                <time dateTime={account.previousUntil}>{formatDateTime(account.previousUntil)}</time> UTC
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
      {receivers.length > 0 && <FailingReceivers receivers={receivers} />}
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
            <tr
              key={`${attempt.eventId}.${attempt.attempt}.${attempt.at}`}
              data-event-id={attempt.eventId}
              data-event-type={attempt.type}
              data-ok={String(attempt.ok)}
            >
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
                <span className={attempt.ok ? "positive" : "negative"}>
                  {attempt.status === null ? "no answer" : `HTTP ${attempt.status}`}
                </span>
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

/** The account's receivers that are failing: how long, paused until when, disabled since when; a button to resume. */
function FailingReceivers({ receivers }: { receivers: WebhookReceiverView[] }) {
  return (
    <div className="stack" data-testid="webhook-receivers">
      <h3 id="receivers-heading">Failing receivers</h3>
      <ul className="receivers">
        {receivers.map((receiver) => (
          <li
            key={receiver.receiver}
            data-receiver={receiver.receiver}
            data-state={receiver.disabledAt ? "disabled" : receiver.pausedUntil ? "paused" : "failing"}
          >
            <p>
              <code>{receiver.receiver}</code>{" "}
              {receiver.disabledAt ? (
                <span className="negative">
                  disabled on <time dateTime={receiver.disabledAt}>{formatDateTime(receiver.disabledAt)}</time> UTC: its
                  events are not sent
                </span>
              ) : (
                <span>
                  {receiver.failures} failed {receiver.failures === 1 ? "delivery" : "deliveries"} in a row since{" "}
                  <time dateTime={receiver.failingSince}>{formatDateTime(receiver.failingSince)}</time> UTC
                  {receiver.pausedUntil && (
                    <>
                      ; paused until <time dateTime={receiver.pausedUntil}>{formatDateTime(receiver.pausedUntil)}</time>{" "}
                      UTC
                    </>
                  )}
                  {receiver.disablesAt && (
                    <>
                      ; disabled on <time dateTime={receiver.disablesAt}>{formatDateTime(receiver.disablesAt)}</time>{" "}
                      UTC unless a delivery gets through
                    </>
                  )}
                </span>
              )}
            </p>
            {receiver.lastError && <p className="hint delivery-error">{receiver.lastError}</p>}
            <form action={enableReceiverAction}>
              <input type="hidden" name="receiver" value={receiver.receiver} />
              <button type="submit" className="secondary">
                {receiver.disabledAt ? "Re-enable" : "Resume now"}
              </button>
            </form>
          </li>
        ))}
      </ul>
    </div>
  );
}
