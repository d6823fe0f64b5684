"use client";

import { useActionState } from "react";
import {
  rotateSecretAction,
  sendTestEventAction,
  setWebhookUrlAction,
  type RotateSecretState,
  type TestEventState,
  type WebhookUrlState,
} from "@/app/actions/webhooks";
import { CopyButton } from "./copy-button";

/** Create or rotate the signing secret; the new one is shown here once. */
export function SecretForm({ hasSecret }: { hasSecret: boolean }) {
  const [state, formAction, pending] = useActionState(rotateSecretAction, {} as RotateSecretState);
  return (
    <div className="stack">
      {state.secret && (
        <div className="key-reveal" role="status">
          <p>
            <strong>New signing secret</strong>
          </p>
          <div className="key-row">
            <input
              className="key-value"
              aria-label="Your new webhook signing secret"
              readOnly
              value={state.secret}
              onFocus={(event) => event.currentTarget.select()}
            />
            <CopyButton text={state.secret} />
          </div>
          <p className="notice">
            Copy it into your receiver now. <strong>You won’t see it again.</strong>
            {state.rotated &&
              " The previous secret keeps signing beside it for 24 hours, so your receiver can switch without missing an event."}
          </p>
        </div>
      )}
      <form action={formAction}>
        <button type="submit" className={hasSecret ? "secondary" : undefined} disabled={pending}>
          {hasSecret ? "Rotate secret" : "Create signing secret"}
        </button>
      </form>
      {state.error && (
        <p role="alert" className="form-error">
          {state.error}
        </p>
      )}
    </div>
  );
}

/** The default URL: where job events go when a job names no `webhook.url`. Empty clears it. */
export function WebhookUrlForm({ defaultUrl }: { defaultUrl: string | null }) {
  const [state, formAction, pending] = useActionState(setWebhookUrlAction, {} as WebhookUrlState);
  return (
    <div className="stack">
      <form action={formAction} className="inline-form">
        <div className="field">
          <label htmlFor="webhook-url">Default webhook URL</label>
          <input
            id="webhook-url"
            name="url"
            type="url"
            maxLength={2048}
            defaultValue={defaultUrl ?? ""}
            placeholder="https://example.com/hooks/ocr"
            aria-invalid={state.error ? true : undefined}
            aria-describedby={state.error ? "webhook-url-error" : undefined}
          />
        </div>
        <button type="submit" className="secondary" disabled={pending}>
          Save URL
        </button>
      </form>
      {state.error && (
        <p id="webhook-url-error" role="alert" className="form-error">
          {state.error}
        </p>
      )}
      {state.saved && !state.error && (
        <p role="status" className="hint">
          {state.saved === "set"
            ? "Saved: jobs submitted from now on without a webhook.url announce their end there."
            : "Cleared."}
        </p>
      )}
    </div>
  );
}

/** "Send a test event": a signed `webhook.test` to the default URL, delivered now. */
export function TestEventForm({ enabled }: { enabled: boolean }) {
  const [state, formAction, pending] = useActionState(sendTestEventAction, {} as TestEventState);
  return (
    <div className="stack">
      <form action={formAction}>
        <button type="submit" className="secondary" disabled={pending || !enabled}>
          Send a test event
        </button>
      </form>
      {state.attempt && (
        <p role="status" data-testid="test-event-result" className={state.attempt.ok ? "hint" : "form-error"}>
          {state.attempt.ok
            ? `Delivered: your receiver answered ${state.attempt.status} in ${state.attempt.latencyMs} ms.`
            : `Not delivered: ${state.attempt.error ?? `HTTP ${state.attempt.status}`}.`}
        </p>
      )}
      {state.error && (
        <p role="alert" className="form-error">
          {state.error}
        </p>
      )}
    </div>
  );
}
