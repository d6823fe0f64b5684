import { getStore } from "./index";

/**
 * The per-session mailbox of the MCP legacy SSE relay (docs/decisions.md#mcp-sse-relay): `POST /api/mcp?sessionId=…` may land on another
 * instance than the one holding the stream, so responses travel through the store.
 */

/** Default lifetime of a mailbox and its messages; the stream side refreshes it while it is open. */
const MAILBOX_TTL_MS = 5 * 60 * 1000;

/** Create (or keep alive) the mailbox of an open stream. */
export function openMailbox(sessionId: string, ttlMs = MAILBOX_TTL_MS): Promise<void> {
  return getStore().openMailbox(sessionId, ttlMs);
}

/** Queue a message for the stream; false when the session is unknown or expired. */
export function pushMailboxMessage(sessionId: string, message: string, ttlMs = MAILBOX_TTL_MS): Promise<boolean> {
  return getStore().pushMailbox(sessionId, message, ttlMs);
}

/** Take every queued message, oldest first. */
export function drainMailbox(sessionId: string): Promise<string[]> {
  return getStore().drainMailbox(sessionId);
}

export function closeMailbox(sessionId: string): Promise<void> {
  return getStore().closeMailbox(sessionId);
}
