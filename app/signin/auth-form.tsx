"use client";

import { useActionState } from "react";
import { signInAction, signUpAction, type AuthFormState } from "@/app/actions/auth";

const initialState: AuthFormState = {};

/** Sign-in or sign-up form; works without JavaScript (the server action answers with the re-rendered page). */
export function AuthForm({
  mode,
  minPasswordLength,
  next,
}: {
  mode: "signin" | "signup";
  minPasswordLength: number;
  next?: string | null;
}) {
  const [state, formAction, pending] = useActionState(mode === "signup" ? signUpAction : signInAction, initialState);
  const signup = mode === "signup";
  return (
    <form action={formAction} className="card stack">
      {next && <input type="hidden" name="next" value={next} />}
      <div className="field">
        <label htmlFor="email">E-mail</label>
        <input
          id="email"
          name="email"
          type="email"
          autoComplete={signup ? "email" : "username"}
          required
          defaultValue={state.email}
          aria-invalid={state.error ? true : undefined}
          aria-describedby={state.error ? "auth-error" : undefined}
        />
      </div>
      <div className="field">
        <label htmlFor="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          autoComplete={signup ? "new-password" : "current-password"}
          required
          minLength={signup ? minPasswordLength : undefined}
          aria-invalid={state.error ? true : undefined}
          aria-describedby={
            [signup ? "password-hint" : "", state.error ? "auth-error" : ""].join(" ").trim() || undefined
          }
        />
        {signup && (
          <p id="password-hint" className="hint">
            At least {minPasswordLength} characters.
          </p>
        )}
      </div>
      {state.error && (
        <p id="auth-error" role="alert" className="form-error">
          {state.error}
        </p>
      )}
      <button type="submit" disabled={pending}>
        {signup ? "Create account" : "Sign in"}
      </button>
    </form>
  );
}
