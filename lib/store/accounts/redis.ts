import { z } from "zod";
import { fixedFields } from "../credits/redis";
import { call, flatHash, integer, type RedisContext } from "../redis-support";
import { createUserScript } from "./scripts";
import { type AccountStore, sessionRecordSchema, userRecordSchema } from "./port";

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
