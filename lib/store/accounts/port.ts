import { z } from "zod";
import type { LedgerDraft } from "../credits/port";

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
