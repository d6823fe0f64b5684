import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import {
  SIGNIN_BACKOFF,
  SIGNIN_WINDOW_MS,
  accountSettings,
  createSession,
  deleteSession,
  formatWait,
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
import { getEnv } from "@/lib/env";
import { withEnv } from "../support/env";
import { waitForWindowRoom, withRedisStoreEnv } from "../support/redis";

// High limits for the file; the limit tests lower them for themselves (withEnv).
withRedisStoreEnv("accounts", {
  FREE_CREDITS: "100",
  SIGNUP_PER_ADDRESS_PER_HOUR: "1000",
  SIGNUP_PER_HOUR: "1000",
});
/** High for the file (the constant is 30); the limit's own test passes a low one. */
const SIGNIN = accountSettings({ signinPerAddress: 1000 });

const HOUR_MS = 60 * 60 * 1000;

/** A documentation address (RFC 5737) of its own for each call: never one another test of this run has counted. */
let lastAddress = 0;
const newAddress = () => `203.0.113.${++lastAddress}`;

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
    const account = await signUp(getStore(), { email: `  ${address.toUpperCase()} `, password }, { env: getEnv() });
    expect(account).toEqual({
      id: expect.stringMatching(/^usr_[\w-]{16}$/),
      email: address,
      createdAt: expect.any(String),
    });
    expect(await getBalance(getStore(), account.id)).toBe(100);
    const { entries } = await listLedger(getStore(), account.id);
    expect(entries).toEqual([expect.objectContaining({ reason: "signup", delta: 100, balanceAfter: 100 })]);
    const stored = await getStore().accounts.getUser(account.id);
    expect(stored?.passwordHash).not.toContain(password);
    expect(await getAccountByEmail(getStore(), address.toUpperCase())).toEqual(account);
  });

  it("refuses a duplicate e-mail, whatever its case, with a clear message", async () => {
    const address = email();
    await signUp(getStore(), { email: address, password }, { env: getEnv() });
    await expect(
      signUp(getStore(), { email: address.toUpperCase(), password }, { env: getEnv() }),
    ).rejects.toMatchObject({
      code: "conflict",
      message: "An account with this e-mail already exists. Sign in instead.",
    });
  });

  it.each([
    [{ email: "not-an-email", password }, "Enter a valid e-mail address."],
    [{ email: email(), password: "short" }, "Use at least 8 characters for the password."],
    [{ email: email(), password: "x".repeat(257) }, "Use at most 256 characters for the password."],
  ])("refuses invalid input %#", async (input, message) => {
    await expect(signUp(getStore(), input, { env: getEnv() })).rejects.toMatchObject({
      code: "invalid_request",
      message,
    });
  });

  it.each(["password", "Password", "12345678", "iloveyou", "qwertyuiop", "trustno1", "football"])(
    "refuses the common password %s with a clear message, and creates nothing",
    async (common) => {
      const address = email();
      await expect(signUp(getStore(), { email: address, password: common }, { env: getEnv() })).rejects.toMatchObject({
        code: "invalid_request",
        message: expect.stringMatching(/one of the most common ones/),
      });
      expect(await getAccountByEmail(getStore(), address)).toBeNull();
    },
  );

  it("refuses the e-mail address (or its name) as the password; accepts an uncommon passphrase", async () => {
    const address = `someone-${randomBytes(4).toString("hex")}@example.com`;
    await expect(signUp(getStore(), { email: address, password: address }, { env: getEnv() })).rejects.toMatchObject({
      message: /not your e-mail/,
    });
    await expect(
      signUp(getStore(), { email: address, password: address.split("@")[0]! }, { env: getEnv() }),
    ).rejects.toMatchObject({
      message: /not your e-mail/,
    });
    await expect(
      signUp(getStore(), { email: address, password: "violet tram ledger 42" }, { env: getEnv() }),
    ).resolves.toMatchObject({
      email: address,
    });
  });
});

describe("sign-up limits", () => {
  it("SIGNUP_PER_ADDRESS_PER_HOUR from one address, then 429 with the real wait; nothing created or granted past it", async () => {
    await waitForWindowRoom(HOUR_MS, 20_000);
    await withEnv({ SIGNUP_PER_ADDRESS_PER_HOUR: "3" }, async () => {
      const address = newAddress();
      for (let i = 0; i < 3; i++) await signUp(getStore(), { email: email(), password, address }, { env: getEnv() });
      const refused = email();
      const error = await signUp(getStore(), { email: refused, password, address }, { env: getEnv() }).catch(
        (caught: unknown) => caught,
      );
      expect(error).toMatchObject({
        code: "rate_limited",
        status: 429,
        message: expect.stringMatching(/^Too many sign-ups from your network\. Try again in \d+ (minute|second)s?\.$/),
      });
      expect(error).toHaveProperty("headers.Retry-After", expect.stringMatching(/^\d+$/));
      expect(await getAccountByEmail(getStore(), refused)).toBeNull();
      // Another address is not affected.
      await expect(
        signUp(
          getStore(),
          { email: email(), password, address: newAddress().replace(/\d+$/, "251") },
          { env: getEnv() },
        ),
      ).resolves.toBeTruthy();
    });
  });

  it("IPv6 addresses count by their /64: rotating the interface part does not help", async () => {
    await waitForWindowRoom(HOUR_MS, 20_000);
    await withEnv({ SIGNUP_PER_ADDRESS_PER_HOUR: "2" }, async () => {
      const network = `2001:db8:${randomBytes(2).toString("hex")}:1`;
      await signUp(getStore(), { email: email(), password, address: `${network}::a` }, { env: getEnv() });
      await signUp(getStore(), { email: email(), password, address: `${network}:0:0:0:b` }, { env: getEnv() });
      await expect(
        signUp(getStore(), { email: email(), password, address: `${network}::c` }, { env: getEnv() }),
      ).rejects.toMatchObject({
        code: "rate_limited",
      });
      await expect(
        signUp(getStore(), { email: email(), password, address: `2001:db8:ffff:2::c` }, { env: getEnv() }),
      ).resolves.toBeTruthy();
    });
  });

  it("SIGNUP_PER_HOUR caps sign-ups from all addresses together", async () => {
    await waitForWindowRoom(HOUR_MS, 20_000);
    await withEnv({ SIGNUP_PER_HOUR: "4" }, async () => {
      // Earlier tests of this file used part of this hour's ceiling: fill what is left from fresh addresses.
      let created = 0;
      let error: unknown;
      for (let i = 0; i < 6 && !error; i++) {
        error = await signUp(
          getStore(),
          { email: email(), password, address: `198.51.100.${10 + i}` },
          { env: getEnv() },
        ).then(
          () => void created++,
          (caught: unknown) => caught,
        );
      }
      expect(created).toBeLessThanOrEqual(4);
      expect(error).toMatchObject({
        code: "rate_limited",
        message: expect.stringMatching(/^Too many new accounts this hour\. Try again in/),
      });
    });
  });
});

describe("sign-in", () => {
  it("accepts the right password with any e-mail case, refuses a wrong one and an unknown e-mail alike", async () => {
    const address = email();
    const account = await signUp(getStore(), { email: address, password }, { env: getEnv() });
    expect(await signIn(getStore(), { email: ` ${address.toUpperCase()}`, password }, SIGNIN)).toEqual(account);
    await expect(signIn(getStore(), { email: address, password: "wrong password" }, SIGNIN)).rejects.toMatchObject({
      code: "unauthorized",
      message: "Wrong e-mail or password.",
    });
    await expect(signIn(getStore(), { email: email(), password }, SIGNIN)).rejects.toMatchObject({
      code: "unauthorized",
      message: "Wrong e-mail or password.",
    });
  });

  it("wrong passwords from one address back off that address only: the owner still signs in from their own", async () => {
    const address = email();
    await signUp(getStore(), { email: address, password }, { env: getEnv() });
    const attacker = newAddress();
    const owner = "198.51.100.200";
    for (let i = 1; i <= SIGNIN_BACKOFF.free; i++) {
      await expect(
        signIn(getStore(), { email: address, password: "wrong password", address: attacker }, SIGNIN),
      ).rejects.toMatchObject({
        code: "unauthorized",
        message: "Wrong e-mail or password.",
      });
    }
    // One failure past the free ones: refused, and told how long to wait; the next try is refused at once with the wait.
    await expect(
      signIn(getStore(), { email: address, password: "wrong password", address: attacker }, SIGNIN),
    ).rejects.toMatchObject({
      code: "unauthorized",
      message: "Wrong e-mail or password. Wait 2 seconds before the next try.",
    });
    const blocked = await signIn(getStore(), { email: address, password, address: attacker }, SIGNIN).catch(
      (caught: unknown) => caught,
    );
    expect(blocked).toMatchObject({
      code: "rate_limited",
      message: expect.stringMatching(/^Too many wrong passwords for this e-mail\. Try again in [12] seconds?\.$/),
    });
    expect(blocked).toHaveProperty("headers.Retry-After", expect.stringMatching(/^[12]$/));
    // The owner, elsewhere, is not locked out.
    await expect(signIn(getStore(), { email: address, password, address: owner }, SIGNIN)).resolves.toMatchObject({
      email: address,
    });
    // The wait doubles with each further failure.
    await sleep(2_100);
    await expect(
      signIn(getStore(), { email: address, password: "wrong again", address: attacker }, SIGNIN),
    ).rejects.toMatchObject({
      message: "Wrong e-mail or password. Wait 4 seconds before the next try.",
    });
  });

  it("a success clears the back-off", async () => {
    const address = email();
    await signUp(getStore(), { email: address, password }, { env: getEnv() });
    const from = newAddress();
    for (let i = 0; i < SIGNIN_BACKOFF.free; i++) {
      await expect(
        signIn(getStore(), { email: address, password: "wrong password", address: from }, SIGNIN),
      ).rejects.toMatchObject({
        code: "unauthorized",
      });
    }
    await expect(signIn(getStore(), { email: address, password, address: from }, SIGNIN)).resolves.toMatchObject({
      email: address,
    });
    await expect(
      signIn(getStore(), { email: address, password: "wrong password", address: from }, SIGNIN),
    ).rejects.toMatchObject({
      message: "Wrong e-mail or password.",
    });
  });

  it("settings.signinPerAddress attempts per 15 minutes from one address across e-mails; other addresses unaffected", async () => {
    await waitForWindowRoom(SIGNIN_WINDOW_MS, 20_000);
    const five = accountSettings({ signinPerAddress: 5 });
    const address = newAddress();
    for (let i = 0; i < 5; i++) {
      await expect(signIn(getStore(), { email: email(), password, address }, five)).rejects.toMatchObject({
        code: "unauthorized",
      });
    }
    await expect(signIn(getStore(), { email: email(), password, address }, five)).rejects.toMatchObject({
      code: "rate_limited",
      message: expect.stringMatching(
        /^Too many sign-in attempts from your network\. Try again in \d+ (minute|second)s?\.$/,
      ),
    });
    await expect(signIn(getStore(), { email: email(), password, address: "198.51.100.7" }, five)).rejects.toMatchObject(
      {
        code: "unauthorized",
      },
    );
  });

  it("states waits as a person reads them", () => {
    expect(formatWait(1)).toBe("1 second");
    expect(formatWait(8)).toBe("8 seconds");
    expect(formatWait(60)).toBe("1 minute");
    expect(formatWait(61)).toBe("2 minutes");
    expect(formatWait(14 * 60 + 5)).toBe("15 minutes");
    expect(formatWait(3 * 3600)).toBe("3 hours");
  });
});

describe("sessions", () => {
  it("creates a random 32-byte session id, resolves it to the account and deletes it on sign-out", async () => {
    const account = await signUp(getStore(), { email: email(), password }, { env: getEnv() });
    const session = await createSession(getStore(), account.id);
    expect(session.id).toMatch(/^[\w-]{43}$/);
    expect(session.expiresAt.getTime() - Date.now()).toBeGreaterThan(29 * 24 * 3600 * 1000);
    expect(await getSessionAccount(getStore(), session.id)).toEqual(account);
    await deleteSession(getStore(), session.id);
    expect(await getSessionAccount(getStore(), session.id)).toBeNull();
  });

  it("expires sessions, and ignores unknown or malformed ids", async () => {
    const account = await signUp(getStore(), { email: email(), password }, { env: getEnv() });
    const session = await createSession(getStore(), account.id, 200);
    expect(await getSessionAccount(getStore(), session.id)).toEqual(account);
    // Its 200 ms lifetime, asked every 50 ms until it has run out.
    await expect.poll(() => getSessionAccount(getStore(), session.id), { timeout: 2_000, interval: 50 }).toBeNull();
    expect(await getSessionAccount(getStore(), randomBytes(32).toString("base64url"))).toBeNull();
    expect(await getSessionAccount(getStore(), "../../etc/passwd")).toBeNull();
    expect(await getSessionAccount(getStore(), undefined)).toBeNull();
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
