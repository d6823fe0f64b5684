import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import {
  AUTH_ATTEMPTS,
  AUTH_WINDOW_MS,
  createSession,
  deleteSession,
  getAccountByEmail,
  getSessionAccount,
  hashPassword,
  isSecureRequest,
  sessionCookieOptions,
  signIn,
  signUp,
  verifyPassword,
} from "@/lib/accounts";
import { getBalance, listLedger } from "@/lib/credits";
import { getStore } from "@/lib/store";
import { waitForWindowRoom, withRedisStoreEnv } from "../support/redis";

withRedisStoreEnv("accounts", { FREE_CREDITS: "100" });

const email = () => `user-${randomBytes(5).toString("hex")}@example.com`;
const password = "correct horse battery";

describe("passwords", () => {
  it("hashes with scrypt and a per-user random salt, and verifies in constant time", async () => {
    const first = await hashPassword(password);
    const second = await hashPassword(password);
    expect(first).toMatch(/^scrypt\$32768\$8\$3\$[\w-]{22}\$[\w-]{43}$/);
    expect(first).not.toBe(second);
    expect(await verifyPassword(password, first)).toBe(true);
    expect(await verifyPassword("wrong password", first)).toBe(false);
    expect(await verifyPassword(password, "scrypt$1$2$3$bad")).toBe(false);
    expect(await verifyPassword(password, "md5$abc")).toBe(false);
  });
});

describe("sign-up", () => {
  it("normalizes the e-mail, grants FREE_CREDITS as a signup ledger entry and never stores the password", async () => {
    const address = email();
    const account = await signUp({ email: `  ${address.toUpperCase()} `, password });
    expect(account).toEqual({ id: expect.stringMatching(/^usr_[\w-]{16}$/), email: address, createdAt: expect.any(String) });
    expect(await getBalance(account.id)).toBe(100);
    const { entries } = await listLedger(account.id);
    expect(entries).toEqual([expect.objectContaining({ reason: "signup", delta: 100, balanceAfter: 100 })]);
    const stored = await getStore().getUser(account.id);
    expect(stored?.passwordHash).not.toContain(password);
    expect(await getAccountByEmail(address.toUpperCase())).toEqual(account);
  });

  it("refuses a duplicate e-mail, whatever its case, with a clear message", async () => {
    const address = email();
    await signUp({ email: address, password });
    await expect(signUp({ email: address.toUpperCase(), password })).rejects.toMatchObject({
      code: "conflict",
      message: "An account with this e-mail already exists. Sign in instead.",
    });
  });

  it.each([
    [{ email: "not-an-email", password }, "Enter a valid e-mail address."],
    [{ email: email(), password: "short" }, "Use at least 8 characters for the password."],
  ])("refuses invalid input %#", async (input, message) => {
    await expect(signUp(input)).rejects.toMatchObject({ code: "invalid_request", message });
  });
});

describe("sign-in", () => {
  it("accepts the right password with any e-mail case, refuses a wrong one and an unknown e-mail alike", async () => {
    const address = email();
    const account = await signUp({ email: address, password });
    expect(await signIn({ email: ` ${address.toUpperCase()}`, password })).toEqual(account);
    await expect(signIn({ email: address, password: "wrong password" })).rejects.toMatchObject({
      code: "unauthorized",
      message: "Wrong e-mail or password.",
    });
    await expect(signIn({ email: email(), password })).rejects.toMatchObject({
      code: "unauthorized",
      message: "Wrong e-mail or password.",
    });
  });

  it(`allows ${AUTH_ATTEMPTS} attempts per e-mail per window, then refuses even the right password`, async () => {
    const address = email();
    await signUp({ email: address, password });
    await waitForWindowRoom(AUTH_WINDOW_MS, 20_000);
    for (let i = 0; i < AUTH_ATTEMPTS - 1; i++) {
      await expect(signIn({ email: address, password: "wrong password" })).rejects.toMatchObject({ code: "unauthorized" });
    }
    await expect(signIn({ email: address, password })).resolves.toMatchObject({ email: address });
    const blocked = signIn({ email: address, password });
    await expect(blocked).rejects.toMatchObject({ code: "rate_limited", status: 429 });
    const error = await blocked.catch((caught: unknown) => caught);
    expect(error).toHaveProperty("headers.Retry-After", expect.stringMatching(/^\d+$/));
  });

  it(`allows ${AUTH_ATTEMPTS} attempts per IP per window across e-mails`, async () => {
    const ip = `203.0.113.${Math.floor(Math.random() * 250)}`;
    await waitForWindowRoom(AUTH_WINDOW_MS, 20_000);
    for (let i = 0; i < AUTH_ATTEMPTS; i++) {
      await expect(signIn({ email: email(), password, ip })).rejects.toMatchObject({ code: "unauthorized" });
    }
    await expect(signIn({ email: email(), password, ip })).rejects.toMatchObject({ code: "rate_limited" });
    // Another IP is not affected.
    await expect(signIn({ email: email(), password, ip: "198.51.100.7" })).rejects.toMatchObject({ code: "unauthorized" });
  });
});

describe("sessions", () => {
  it("creates a random 32-byte session id, resolves it to the account and deletes it on sign-out", async () => {
    const account = await signUp({ email: email(), password });
    const session = await createSession(account.id);
    expect(session.id).toMatch(/^[\w-]{43}$/);
    expect(session.expiresAt.getTime() - Date.now()).toBeGreaterThan(29 * 24 * 3600 * 1000);
    expect(await getSessionAccount(session.id)).toEqual(account);
    await deleteSession(session.id);
    expect(await getSessionAccount(session.id)).toBeNull();
  });

  it("expires sessions, and ignores unknown or malformed ids", async () => {
    const account = await signUp({ email: email(), password });
    const session = await createSession(account.id, 200);
    expect(await getSessionAccount(session.id)).toEqual(account);
    await sleep(400);
    expect(await getSessionAccount(session.id)).toBeNull();
    expect(await getSessionAccount(randomBytes(32).toString("base64url"))).toBeNull();
    expect(await getSessionAccount("../../etc/passwd")).toBeNull();
    expect(await getSessionAccount(undefined)).toBeNull();
  });

  it("uses HttpOnly, SameSite=Lax cookies that are Secure except over http on this machine", () => {
    const expiresAt = new Date();
    expect(sessionCookieOptions({ expiresAt, secure: true })).toEqual({
      httpOnly: true,
      secure: true,
      sameSite: "lax",
      path: "/",
      expires: expiresAt,
    });
    expect(isSecureRequest({ protocol: "https", host: "ocr.example.com" })).toBe(true);
    expect(isSecureRequest({ protocol: "http", host: "ocr.example.com" })).toBe(true);
    expect(isSecureRequest({ protocol: "http", host: "localhost:3000" })).toBe(false);
    expect(isSecureRequest({ protocol: "http", host: "127.0.0.1:4123" })).toBe(false);
    expect(isSecureRequest({ protocol: null, host: "[::1]:3000" })).toBe(false);
  });
});
