import { z } from "zod";
import type { MemoryBalances } from "./credits/memory";
import type { LedgerDraft } from "./credits/port";
import { fixedFields } from "./credits/redis";
import { ExpiringMap } from "./memory-support";
import { call, flatHash, integer, type RedisContext } from "./redis-support";
import { createUserScript } from "./scripts";

export const userRecordSchema = z.object({
  id: z.string().startsWith("usr_"),
  email: z.string(),
  /** `scrypt$N$r$p$salt$hash` (see lib/accounts/password.ts). */
  passwordHash: z.string(),
  createdAt: z.iso.datetime(),
});
export type UserRecord = z.infer<typeof userRecordSchema>;

export const sessionRecordSchema = z.object({
  userId: z.string(),
  createdAt: z.iso.datetime(),
  expiresAt: z.iso.datetime(),
});
export type SessionRecord = z.infer<typeof sessionRecordSchema>;

/** Users and their browser sessions (lib/accounts is the caller). */
export interface AccountStore {
  /**
   * Create a user, its e-mail index and (when `signupCredits` > 0) its starting balance with a `signup` ledger
   * entry, atomically. Returns false, writing nothing, when the e-mail is taken.
   */
  createUser(input: { user: UserRecord; signupCredits: number; signupEntry: LedgerDraft }): Promise<boolean>;
  getUser(userId: string): Promise<UserRecord | null>;
  getUserIdByEmail(email: string): Promise<string | null>;

  // Sessions are keyed by a hash of the session id; the id itself only lives in the cookie.
  createSession(sessionKey: string, session: SessionRecord, ttlMs: number): Promise<void>;
  getSession(sessionKey: string): Promise<SessionRecord | null>;
  deleteSession(sessionKey: string): Promise<void>;
}

/** Accounts on Redis: `user:{id}` hash, `email:{email}` → id, `session:{sha256}` JSON with a TTL. */
export function createRedisAccountStore({ redis, key }: RedisContext): AccountStore {
  const createUser = redis.createScript<unknown>(createUserScript);
  return {
    async createUser({ user, signupCredits, signupEntry }) {
      const reply = await call("createUser", () =>
        createUser.exec(
          [key.email(user.email), key.user(user.id), key.credits(user.id), key.ledger(user.id)],
          [user.id, user.email, user.passwordHash, user.createdAt, String(signupCredits), fixedFields(signupEntry)],
        ),
      );
      return integer.parse(reply) === 1;
    },

    async getUser(userId) {
      const reply = await call("getUser", () => redis.hgetall(key.user(userId)));
      const record = flatHash.nullable().parse(reply);
      return record && Object.keys(record).length > 0 ? userRecordSchema.parse(record) : null;
    },

    async getUserIdByEmail(email) {
      const reply = await call("getUserIdByEmail", () => redis.get(key.email(email)));
      return z.string().nullable().parse(reply);
    },

    async createSession(sessionKey, session, ttlMs) {
      await call("createSession", () => redis.set(key.session(sessionKey), JSON.stringify(session), { px: ttlMs }));
    },

    async getSession(sessionKey) {
      const reply = await call("getSession", () => redis.get(key.session(sessionKey)));
      const raw = z.string().nullable().parse(reply);
      return raw === null ? null : sessionRecordSchema.parse(JSON.parse(raw));
    },

    async deleteSession(sessionKey) {
      await call("deleteSession", () => redis.del(key.session(sessionKey)));
    },
  };
}

/** Accounts for one process; a new user's signup credits go into the balances the memory credit store reads. */
export function createMemoryAccountStore(balances: MemoryBalances): AccountStore {
  const users = new Map<string, UserRecord>();
  const emails = new Map<string, string>();
  const sessions = new ExpiringMap<SessionRecord>();

  return {
    async createUser({ user, signupCredits, signupEntry }) {
      if (emails.has(user.email)) return false;
      emails.set(user.email, user.id);
      users.set(user.id, { ...user });
      if (signupCredits > 0) balances.change(user.id, signupCredits, signupEntry);
      return true;
    },

    async getUser(userId) {
      const user = users.get(userId);
      return user ? { ...user } : null;
    },

    async getUserIdByEmail(email) {
      return emails.get(email) ?? null;
    },

    async createSession(sessionKey, session, ttlMs) {
      sessions.set(sessionKey, { ...session }, ttlMs);
    },

    async getSession(sessionKey) {
      const session = sessions.get(sessionKey);
      return session ? { ...session } : null;
    },

    async deleteSession(sessionKey) {
      sessions.delete(sessionKey);
    },
  };
}
