import { z } from "zod";
import { call, integer, type RedisContext } from "../redis-support";
import { drainMailboxScript, pushMailboxScript } from "./scripts";
import { MAILBOX_MAX_MESSAGES, type MailboxStore } from "./port";

/** Mailboxes on Redis: `mailbox-open:{id}` says it is open, `mailbox:{id}` is the message list. */
export function createRedisMailboxStore({ redis, key }: RedisContext): MailboxStore {
  const scripts = {
    push: redis.createScript<unknown>(pushMailboxScript),
    drain: redis.createScript<unknown>(drainMailboxScript),
  };
  return {
    async openMailbox(id, ttlMs) {
      await call("openMailbox", async () => {
        const pipeline = redis.multi();
        pipeline.set(key.mailboxOpen(id), "1", { px: ttlMs });
        pipeline.pexpire(key.mailbox(id), ttlMs);
        await pipeline.exec();
      });
    },

    async pushMailbox(id, message, ttlMs) {
      const reply = await call("pushMailbox", () =>
        scripts.push.exec(
          [key.mailboxOpen(id), key.mailbox(id)],
          [message, String(ttlMs), String(MAILBOX_MAX_MESSAGES)],
        ),
      );
      return integer.parse(reply) === 1;
    },

    async drainMailbox(id) {
      return z.array(z.string()).parse(await call("drainMailbox", () => scripts.drain.exec([key.mailbox(id)], [])));
    },

    async closeMailbox(id) {
      await call("closeMailbox", () => redis.del(key.mailboxOpen(id), key.mailbox(id)));
    },
  };
}
