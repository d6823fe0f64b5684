import { z } from "zod";
import { ExpiringMap } from "./memory-support";
import { call, integer, type RedisContext } from "./redis-support";
import { drainMailboxScript, pushMailboxScript } from "./scripts";

/** Upper bound of messages a mailbox holds; older ones are dropped (a stream that nobody drains). */
export const MAILBOX_MAX_MESSAGES = 1_000;

/**
 * Mailboxes of the MCP legacy SSE relay (lib/mcp/relay.ts, docs/decisions.md#mcp-sse-relay): the instance that
 * takes a POST pushes, the instance holding the stream drains.
 */
export interface MailboxStore {
  /** Create or extend a mailbox for `ttlMs`. */
  openMailbox(id: string, ttlMs: number): Promise<void>;
  /** Append a message; false (nothing stored) when the mailbox is not open (never opened, expired or closed). */
  pushMailbox(id: string, message: string, ttlMs: number): Promise<boolean>;
  /** Take every waiting message, oldest first. */
  drainMailbox(id: string): Promise<string[]>;
  closeMailbox(id: string): Promise<void>;
}

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
        scripts.push.exec([key.mailboxOpen(id), key.mailbox(id)], [message, String(ttlMs), String(MAILBOX_MAX_MESSAGES)]),
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

/** Mailboxes for one process, with the same rules as the redis adapter. */
export function createMemoryMailboxStore(): MailboxStore {
  const open = new ExpiringMap<true>();
  const mailboxes = new ExpiringMap<string[]>();
  return {
    async openMailbox(id, ttlMs) {
      open.set(id, true, ttlMs);
      mailboxes.expire(id, ttlMs);
    },

    async pushMailbox(id, message, ttlMs) {
      if (!open.get(id)) return false;
      mailboxes.set(id, [...(mailboxes.get(id) ?? []), message].slice(-MAILBOX_MAX_MESSAGES), ttlMs);
      return true;
    },

    async drainMailbox(id) {
      const messages = mailboxes.get(id) ?? [];
      mailboxes.delete(id);
      return messages;
    },

    async closeMailbox(id) {
      open.delete(id);
      mailboxes.delete(id);
    },
  };
}
