import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { PASSWORD_MIN_LENGTH } from "@/lib/accounts";
import { getCurrentAccount } from "@/lib/accounts/current";
import { getEnv } from "@/lib/env";
import { AuthForm } from "./auth-form";

export const metadata: Metadata = { title: "Sign in" };

export default async function SignInPage({ searchParams }: { searchParams: Promise<{ mode?: string | string[] }> }) {
  // A store outage should still show the form (whose submission then explains the outage).
  if (await getCurrentAccount().catch(() => null)) redirect("/settings");
  const mode = (await searchParams).mode === "signup" ? "signup" : "signin";

  return (
    <section className="auth">
      <h1>{mode === "signup" ? "Create an account" : "Sign in"}</h1>
      <p className="muted">
        {mode === "signup"
          ? `New accounts get ${getEnv().FREE_CREDITS} free credits: one credit reads one page.`
          : "Sign in to manage your API keys and see your credits."}
      </p>
      <AuthForm key={mode} mode={mode} minPasswordLength={PASSWORD_MIN_LENGTH} />
      <p>
        {mode === "signup" ? (
          <>
            Already have an account? <Link href="/signin">Sign in</Link>
          </>
        ) : (
          <>
            New here? <Link href="/signin?mode=signup">Create an account</Link>
          </>
        )}
      </p>
    </section>
  );
}
