import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { PASSWORD_MIN_LENGTH } from "@/lib/accounts";
import { getCurrentAccount } from "@/lib/accounts/current";
import { getEnv } from "@/lib/env";
import { signInReturnPath } from "@/lib/oauth";
import { AuthForm } from "./auth-form";

export const metadata: Metadata = { title: "Sign in" };

type SearchParams = Promise<{ mode?: string | string[]; next?: string | string[] }>;

export default async function SignInPage({ searchParams }: { searchParams: SearchParams }) {
  const params = await searchParams;
  // After signing in: back to an app's authorization page when it sent the browser here (lib/oauth signInReturnPath).
  const next = signInReturnPath(params.next);
  // A store outage should still show the form (whose submission then explains the outage).
  if (await getCurrentAccount().catch(() => null)) redirect(next ?? "/settings");
  const mode = params.mode === "signup" ? "signup" : "signin";
  const other = (target: string) =>
    next ? `${target}${target.includes("?") ? "&" : "?"}next=${encodeURIComponent(next)}` : target;

  return (
    <section className="auth">
      <h1>{mode === "signup" ? "Create an account" : "Sign in"}</h1>
      <p className="muted">
        {mode === "signup"
          ? `New accounts get ${getEnv().FREE_CREDITS} free credits: one credit reads one page.`
          : next
            ? "Sign in to let the app that sent you here use your account."
            : "Sign in to manage your API keys and see your credits."}
      </p>
      <AuthForm key={mode} mode={mode} minPasswordLength={PASSWORD_MIN_LENGTH} next={next} />
      <p>
        {mode === "signup" ? (
          <>
            Already have an account? <Link href={other("/signin")}>Sign in</Link>
          </>
        ) : (
          <>
            New here? <Link href={other("/signin?mode=signup")}>Create an account</Link>
          </>
        )}
      </p>
    </section>
  );
}
