/** Upper bound of messages a mailbox holds; older ones are dropped (a stream that nobody drains). */
export const MAILBOX_MAX_MESSAGES = 1_000;

/**
 * Mailboxes of the MCP legacy SSE relay (lib/mcp/sse/relay.ts, docs/decisions.md#mcp-sse-relay): the instance that
 * takes a POST pushes, the instance holding the stream drains. Also the cancel marks of a running MCP read
 * (lib/mcp/running-calls.ts, docs/decisions.md#mcp-cancel-read).
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
