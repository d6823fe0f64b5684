"use client";

import { useActionState } from "react";
import { addTestCreditsAction } from "@/app/actions/credits";
import type { FormError } from "@/app/actions/form-state";

const initialState: FormError = {};

/** Development servers on the embedded store only (the page decides; the action checks again). */
export function TestCreditsForm({ credits }: { credits: number }) {
  const [state, formAction, pending] = useActionState(addTestCreditsAction, initialState);
  return (
    <form action={formAction} className="inline-form">
      <button type="submit" className="secondary" disabled={pending}>
        Add {credits.toLocaleString("en")} test credits
      </button>
      <span className="muted">
        This development server keeps accounts in memory, where the admin CLI cannot reach them; with Redis (and in
        production) credits come from <code>npm run admin -- grant</code>.
      </span>
      {state.error && (
        <p className="error" role="alert">
          {state.error}
        </p>
      )}
    </form>
  );
}
