import { ExpiringMap } from "../memory-support";
import { MAILBOX_MAX_MESSAGES, type MailboxStore } from "./port";

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
