import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import { getEnv } from "@/lib/env";
import { ApiError } from "@/lib/errors";
import { getStore, type UserRecord } from "@/lib/store";
import { decoyPasswordHash, hashPassword, verifyPassword } from "./password";

/** What the app may know about a signed-in user (never the password hash). */
export interface Account {
  id: string;
  email: string;
  createdAt: string;
}

export const PASSWORD_MIN_LENGTH = 8;
/** Sign-in attempts allowed per e-mail and per client IP in {@link AUTH_WINDOW_MS}. */
export const AUTH_ATTEMPTS = 10;
export const AUTH_WINDOW_MS = 15 * 60 * 1000;

/** E-mails are compared trimmed and lower-cased: `Ann@Example.com ` and `ann@example.com` are one account. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export const emailSchema = z
  .string()
  .transform(normalizeEmail)
  .pipe(z.email("Enter a valid e-mail address.").max(254, "That e-mail address is too long."));

export const passwordSchema = z
  .string()
  .min(PASSWORD_MIN_LENGTH, `Use at least ${PASSWORD_MIN_LENGTH} characters for the password.`)
  .max(256, "Use at most 256 characters for the password.");

const credentialsSchema = z.object({ email: emailSchema, password: passwordSchema });

export interface Credentials {
  email: string;
  password: string;
  /** The client's IP address, for the per-IP attempt limit (omit when unknown). */
  ip?: string;
}

function toAccount(user: UserRecord): Account {
  return { id: user.id, email: user.email, createdAt: user.createdAt };
}

function parseCredentials(input: Credentials): { email: string; password: string } {
  const parsed = credentialsSchema.safeParse(input);
  if (!parsed.success) throw new ApiError("invalid_request", parsed.error.issues[0]?.message ?? "Invalid credentials");
  return parsed.data;
}

async function limitAttempts(checks: Array<{ bucket: string; identifier: string }>): Promise<void> {
  const store = getStore();
  const results = await Promise.all(
    checks.map((check) => store.rateLimit({ ...check, limit: AUTH_ATTEMPTS, windowMs: AUTH_WINDOW_MS })),
  );
  const blocked = results.filter((result) => !result.success);
  if (blocked.length === 0) return;
  const retryAfter = Math.max(1, Math.ceil((Math.max(...blocked.map((result) => result.reset)) - Date.now()) / 1000));
  throw new ApiError(
    "rate_limited",
    `Too many attempts. Try again in ${Math.ceil(retryAfter / 60)} minute${retryAfter > 60 ? "s" : ""}.`,
    { headers: { "Retry-After": String(retryAfter) } },
  );
}

const hashIdentifier = (value: string) => createHash("sha256").update(value).digest("hex").slice(0, 32);

/**
 * Create an account with `FREE_CREDITS` (a `signup` ledger entry). Throws `invalid_request` (bad e-mail, short
 * password), `conflict` (e-mail taken), `rate_limited` (too many attempts from this IP) or `unavailable`.
 */
export async function signUp(input: Credentials): Promise<Account> {
  const { email, password } = parseCredentials(input);
  if (input.ip) await limitAttempts([{ bucket: "auth-ip", identifier: input.ip }]);
  const now = new Date().toISOString();
  const user: UserRecord = {
    id: `usr_${randomBytes(12).toString("base64url")}`,
    email,
    passwordHash: await hashPassword(password),
    createdAt: now,
  };
  const created = await getStore().createUser({
    user,
    signupCredits: getEnv().FREE_CREDITS,
    signupEntry: { id: `led_${randomBytes(12).toString("base64url")}`, at: now, reason: "signup" },
  });
  if (!created) throw new ApiError("conflict", "An account with this e-mail already exists. Sign in instead.");
  return toAccount(user);
}

/**
 * Check an e-mail and password. Throws `unauthorized` ("Wrong e-mail or password.", the same for an unknown
 * e-mail, in the same time), `rate_limited` (10 attempts per 15 minutes per e-mail and per IP) or `unavailable`.
 */
export async function signIn(input: Credentials): Promise<Account> {
  const email = normalizeEmail(input.email);
  await limitAttempts([
    { bucket: "signin-email", identifier: hashIdentifier(email) },
    ...(input.ip ? [{ bucket: "auth-ip", identifier: input.ip }] : []),
  ]);
  const wrong = new ApiError("unauthorized", "Wrong e-mail or password.");
  const user = await findUserByEmail(email);
  if (!user) {
    await verifyPassword(input.password, await decoyPasswordHash());
    throw wrong;
  }
  if (!(await verifyPassword(input.password, user.passwordHash))) throw wrong;
  return toAccount(user);
}

async function findUserByEmail(email: string): Promise<UserRecord | null> {
  const store = getStore();
  const userId = await store.getUserIdByEmail(normalizeEmail(email));
  return userId ? store.getUser(userId) : null;
}

export async function getAccountByEmail(email: string): Promise<Account | null> {
  const user = await findUserByEmail(email);
  return user ? toAccount(user) : null;
}

export async function getAccount(userId: string): Promise<Account | null> {
  const user = await getStore().getUser(userId);
  return user ? toAccount(user) : null;
}
