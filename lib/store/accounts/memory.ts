import type { MemoryBalances } from "../credits/memory";
import { ExpiringMap } from "../memory-support";
import type { AccountStore, SessionRecord, UserRecord } from "./port";

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
