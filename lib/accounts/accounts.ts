import "server-only"; // signs up and signs in with passwords: never in a client bundle (Next fails the build)
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import type { Env } from "@/lib/env";
import { ApiError } from "@/lib/api/errors";
import { addressLimitKey } from "@/lib/client-ip";
import type { BackoffPolicy, Store, UserRecord } from "@/lib/store";
import { rejectCommonPassword } from "./common-passwords";
import { decoyPasswordHash, hashPassword, verifyPassword } from "./password";

/** What the app may know about a signed-in user (never the password hash). */
export interface Account {
  id: string;
  email: string;
  createdAt: string;
}

export const PASSWORD_MIN_LENGTH = 8;
const PASSWORD_MAX_LENGTH = 256;

const HOUR_MS = 60 * 60 * 1000;
/** The window of the per-address sign-in limit (`settings.signinPerAddress` attempts). */
export const SIGNIN_WINDOW_MS = 15 * 60 * 1000;

/** The account limits that are not variables. */
export interface AccountSettings {
  /** Sign-in attempts per client address per `SIGNIN_WINDOW_MS`, whatever the e-mail (was `SIGNIN_PER_ADDRESS`). */
  signinPerAddress: number;
}

/** The account limits, with `overrides` on top (lib/settings.ts). */
export function accountSettings(overrides: Partial<AccountSettings> = {}): AccountSettings {
  return { signinPerAddress: 30, ...overrides };
}
/**
 * Wrong passwords for one e-mail from one client address: 5 cost nothing, then each waits twice as long as the one
 * before (2 s, 4 s, 8 s, … up to 15 minutes); forgotten a day after the last failure or at the next success. Counted
 * per (e-mail, address) pair, so failures from elsewhere never lock the owner out at their own address.
 */
export const SIGNIN_BACKOFF: BackoffPolicy = { free: 5, baseMs: 2_000, maxMs: 15 * 60 * 1000, ttlMs: 24 * HOUR_MS };

/** E-mails are compared trimmed and lower-cased: `Ann@Example.com ` and `ann@example.com` are one account. */
function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

const emailSchema = z
  .string()
  .transform(normalizeEmail)
  .pipe(z.email("Enter a valid e-mail address.").max(254, "That e-mail address is too long."));

const passwordSchema = z
  .string()
  .min(PASSWORD_MIN_LENGTH, `Use at least ${PASSWORD_MIN_LENGTH} characters for the password.`)
  .max(PASSWORD_MAX_LENGTH, `Use at most ${PASSWORD_MAX_LENGTH} characters for the password.`);

const credentialsSchema = z.object({ email: emailSchema, password: passwordSchema });

interface Credentials {
  email: string;
  password: string;
  /** The client's address (lib/client-ip.ts), for the per-address limits; omitted when unknown. */
  address?: string;
}

function toAccount(user: UserRecord): Account {
  return { id: user.id, email: user.email, createdAt: user.createdAt };
}

function parseCredentials(input: Credentials): { email: string; password: string } {
  const parsed = credentialsSchema.safeParse(input);
  if (!parsed.success) throw new ApiError("invalid_request", parsed.error.issues[0]?.message ?? "Invalid credentials");
  return parsed.data;
}

/** Count one attempt against a fixed-window limit; past it `429` saying `what` and the real wait. */
async function limit(
  store: Store,
  check: { bucket: string; identifier: string; limit: number; windowMs: number },
  what: string,
): Promise<void> {
  const result = await store.limits.rateLimit(check);
  if (!result.success) throw tooMany(what, result.reset);
}

function tooMany(what: string, until: number): ApiError {
  const seconds = Math.max(1, Math.ceil((until - Date.now()) / 1000));
  return new ApiError("rate_limited", `${what} Try again in ${formatWait(seconds)}.`, {
    headers: { "Retry-After": String(seconds) },
  });
}

/** "8 seconds", "1 minute", "14 minutes", "2 hours": the wait as a person reads it (rounded up). */
export function formatWait(seconds: number): string {
  const unit = (count: number, name: string) => `${count} ${name}${count === 1 ? "" : "s"}`;
  if (seconds < 60) return unit(seconds, "second");
  if (seconds < 90 * 60) return unit(Math.ceil(seconds / 60), "minute");
  return unit(Math.ceil(seconds / 3600), "hour");
}

const hashIdentifier = (value: string) => createHash("sha256").update(value).digest("hex").slice(0, 32);

/** The variables sign-up reads: the credits a new account gets and the two sign-up limits. */
export type SignUpSettings = Pick<Env, "FREE_CREDITS" | "SIGNUP_PER_ADDRESS_PER_HOUR" | "SIGNUP_PER_HOUR">;

/**
 * Create an account with `FREE_CREDITS` (`options.env`; a `signup` ledger entry). Throws `invalid_request` (bad e-mail, short or
 * common password), `rate_limited` (`SIGNUP_PER_ADDRESS_PER_HOUR` from this address, or `SIGNUP_PER_HOUR` in all),
 * `conflict` (e-mail taken) or `unavailable`. The limits are counted before any work (the scrypt hash) and before
 * anything is granted.
 */
export async function signUp(
  store: Store,
  input: Credentials,
  options: { env: SignUpSettings; operator?: boolean },
): Promise<Account> {
  const { email, password } = parseCredentials(input);
  await rejectCommonPassword(password, email);
  const { env } = options;
  // The address's own limit first, so one address's flood does not use up everybody's hour. An operator (the admin
  // CLI) is not a visitor: no limits.
  if (!options.operator) await limitSignUp(store, env, input.address);
  const now = new Date().toISOString();
  const user: UserRecord = {
    id: `usr_${randomBytes(12).toString("base64url")}`,
    email,
    passwordHash: await hashPassword(password),
    createdAt: now,
  };
  const created = await store.accounts.createUser({
    user,
    signupCredits: env.FREE_CREDITS,
    signupEntry: { id: `led_${randomBytes(12).toString("base64url")}`, at: now, reason: "signup" },
  });
  if (!created) throw new ApiError("conflict", "An account with this e-mail already exists. Sign in instead.");
  return toAccount(user);
}

async function limitSignUp(store: Store, env: SignUpSettings, address: string | undefined): Promise<void> {
  await limit(
    store,
    {
      bucket: "signup-address",
      identifier: addressLimitKey(address),
      limit: env.SIGNUP_PER_ADDRESS_PER_HOUR,
      windowMs: HOUR_MS,
    },
    "Too many sign-ups from your network.",
  );
  await limit(
    store,
    { bucket: "signup-all", identifier: "all", limit: env.SIGNUP_PER_HOUR, windowMs: HOUR_MS },
    "Too many new accounts this hour.",
  );
}

/**
 * Check an e-mail and password. Throws `unauthorized` ("Wrong e-mail or password.", the same for an unknown
 * e-mail, in the same time), `rate_limited` or `unavailable`. Two limits: `settings.signinPerAddress` attempts per 15
 * minutes from one address (any e-mails), and {@link SIGNIN_BACKOFF} per (e-mail, address) pair — wrong passwords
 * sent from elsewhere never block the right one from the owner's address.
 */
export async function signIn(store: Store, input: Credentials, settings: AccountSettings): Promise<Account> {
  const email = normalizeEmail(input.email);
  const limits = store.limits;
  const addressKey = addressLimitKey(input.address);
  const subject = `signin:${hashIdentifier(`${email}\n${addressKey}`)}`;
  const backoff = await limits.getBackoff(subject);
  if (backoff && backoff.until > Date.now()) throw tooMany("Too many wrong passwords for this e-mail.", backoff.until);
  await limit(
    store,
    {
      bucket: "signin-address",
      identifier: addressKey,
      limit: settings.signinPerAddress,
      windowMs: SIGNIN_WINDOW_MS,
    },
    "Too many sign-in attempts from your network.",
  );
  const user = await findUserByEmail(store, email);
  const ok = user
    ? await verifyPassword(input.password, user.passwordHash)
    : await verifyPassword(input.password, await decoyPasswordHash()).then(() => false);
  if (!ok || !user) {
    const state = await limits.recordBackoffFailure(subject, Date.now(), SIGNIN_BACKOFF);
    const wait =
      state.until > Date.now()
        ? ` Wait ${formatWait(Math.ceil((state.until - Date.now()) / 1000))} before the next try.`
        : "";
    throw new ApiError("unauthorized", `Wrong e-mail or password.${wait}`);
  }
  if (backoff) await limits.clearBackoff(subject);
  return toAccount(user);
}

async function findUserByEmail(store: Store, email: string): Promise<UserRecord | null> {
  const accounts = store.accounts;
  const userId = await accounts.getUserIdByEmail(normalizeEmail(email));
  return userId ? accounts.getUser(userId) : null;
}

export async function getAccountByEmail(store: Store, email: string): Promise<Account | null> {
  const user = await findUserByEmail(store, email);
  return user ? toAccount(user) : null;
}

export async function getAccount(store: Store, userId: string): Promise<Account | null> {
  const user = await store.accounts.getUser(userId);
  return user ? toAccount(user) : null;
}
