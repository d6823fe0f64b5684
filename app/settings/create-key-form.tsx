"use client";

import { useActionState } from "react";
import { createKeyAction, type CreateKeyState } from "@/app/actions/keys";
import { CopyButton } from "./copy-button";
import { TryIt } from "./try-it";

const initialState: CreateKeyState = {};

/** Name → new key, which is shown here once (it exists only in this action's response). */
export function CreateKeyForm() {
  const [state, formAction, pending] = useActionState(createKeyAction, initialState);
  return (
    <div className="stack">
      {state.created && (
        <div className="key-reveal" role="status">
          <p>
            <strong>New key “{state.created.name}”</strong>
          </p>
          <div className="key-row">
            <input
              className="key-value"
              aria-label="Your new API key"
              readOnly
              value={state.created.key}
              onFocus={(event) => event.currentTarget.select()}
            />
            <CopyButton text={state.created.key} />
          </div>
          <p className="notice">
            Copy it now and keep it somewhere safe. <strong>You won’t see it again</strong>: we only store a hash. If
            you lose it, revoke it and create a new one.
          </p>
        </div>
      )}
      {state.created && <TryIt apiKey={state.created.key} origin={state.created.origin} />}
      <form action={formAction} className="inline-form">
        <div className="field">
          <label htmlFor="key-name">Key name</label>
          <input
            id="key-name"
            name="name"
            required
            maxLength={64}
            placeholder="e.g. production server"
            aria-invalid={state.error ? true : undefined}
            aria-describedby={state.error ? "key-error" : undefined}
          />
        </div>
        <button type="submit" disabled={pending}>
          Create key
        </button>
      </form>
      {state.error && (
        <p id="key-error" role="alert" className="form-error">
          {state.error}
        </p>
      )}
    </div>
  );
}
