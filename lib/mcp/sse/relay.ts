import { randomBytes } from "node:crypto";
import { z } from "zod";
import { errorLabel } from "@/lib/error-log";
import type { Store } from "@/lib/store";
import type { SseTiming } from "../config";

/*
 * The legacy HTTP+SSE transport (protocol 2024-11-05), which the SDK no longer serves: `GET /api/mcp` holds an
 * event stream, `POST /api/mcp?sessionId=…` delivers a message whose response travels on that stream. On serverless
 * the two requests may run on different instances, so the POST side pushes into the session's mailbox in the Store
 * (a Redis list) and the stream side drains it.
 *
 * Mailbox entries (JSON, validated when drained — the store is a trust boundary):
 *   { "open": token }                 a POST was accepted and is being processed
 *   { "note": token, "messages": [] } notifications it sent while still in progress (progress of a tool call)
 *   { "done": token, "messages": [] } its JSON-RPC responses (none for notifications)
 * The `open` marker lets the stream know that an answer is coming: it polls fast meanwhile, and near the end of its
 * life it waits for pending answers (until the hard end) rather than cutting them off.
 */

/**
 * How long a session lives without its stream refreshing it (an instance that died takes its sessions with it); the
 * stream refreshes it every `SseTiming.refreshMs`.
 */
export const SESSION_TTL_MS = 60_000;
/** After activity, the stream keeps polling fast this long: clients send bursts (initialize, initialized, list). */
const LINGER_MS = 5_000;
/** The `retry:` hint of the stream: how soon an EventSource reconnects after the stream closes itself. */
const SSE_RETRY_MS = 500;
/** The `retry:` hint of a stream that may not be wanted (`closeIfUnused`): a client that ignores it comes back rarely. */
const IDLE_CLIENT_RETRY_MS = 300_000;

/** Create (or keep alive, for `ttlMs`) the mailbox of a session's stream: the GET side, before it streams. */
export function openMailbox(store: Store, mailboxId: string, ttlMs: number): Promise<void> {
  return store.mailbox.openMailbox(mailboxId, ttlMs);
}

/**
 * A new session id: 128 random bits, then the stream's hard end (epoch ms in base 36). The POST side reads the end
 * from the id and bounds its work by it, so an answer is always ready while the stream can still deliver it. The id
 * names the mailbox, so an altered end names a mailbox that does not exist.
 */
export function newSessionId(hardEnd: number): string {
  return `${randomBytes(16).toString("base64url")}.${Math.trunc(hardEnd).toString(36)}`;
}

const SESSION_ID = /^[A-Za-z0-9_-]{22}\.([0-9a-z]{1,11})$/;

/** The hard end of the session's stream (epoch ms), or null for something that is not a session id of ours. */
export function sessionStreamEnd(sessionId: string): number | null {
  const match = SESSION_ID.exec(sessionId);
  return match ? parseInt(match[1]!, 36) : null;
}

/**
 * The mailbox of a session, named by the API key that opened it: the same session id with another key (another
 * account's, or another of the same account's keys) names a mailbox that does not exist, so it answers 404 exactly
 * like an unknown session — sessions cannot be probed or used across keys.
 */
export function sessionMailboxId(keyId: string, sessionId: string): string {
  return `mcp:${keyId}:${sessionId}`;
}

const jsonRpcMessageSchema = z.looseObject({ jsonrpc: z.literal("2.0") });
export type RelayedMessage = z.infer<typeof jsonRpcMessageSchema>;

const mailboxEntrySchema = z.union([
  z.strictObject({ open: z.string() }),
  z.strictObject({ note: z.string(), messages: z.array(jsonRpcMessageSchema) }),
  z.strictObject({ done: z.string(), messages: z.array(jsonRpcMessageSchema) }),
]);
type MailboxEntry = z.infer<typeof mailboxEntrySchema>;

/** Mark a POST as accepted on the session. Returns its token, or null when the session is unknown or expired. */
export async function acceptSessionPost(store: Store, mailboxId: string): Promise<string | null> {
  const token = randomBytes(9).toString("base64url");
  const entry: MailboxEntry = { open: token };
  return (await store.mailbox.pushMailbox(mailboxId, JSON.stringify(entry), SESSION_TTL_MS)) ? token : null;
}

/**
 * Queue notifications of an accepted POST that is still being processed (they go out at once; the POST stays
 * pending). False when the stream closed meanwhile.
 */
export async function queueSessionNotes(
  store: Store,
  mailboxId: string,
  token: string,
  messages: RelayedMessage[],
): Promise<boolean> {
  const entry: MailboxEntry = { note: token, messages };
  return store.mailbox.pushMailbox(mailboxId, JSON.stringify(entry), SESSION_TTL_MS);
}

/** Queue the responses of an accepted POST for the stream. False when the stream closed meanwhile. */
export async function completeSessionPost(
  store: Store,
  mailboxId: string,
  token: string,
  messages: RelayedMessage[],
): Promise<boolean> {
  const entry: MailboxEntry = { done: token, messages };
  return store.mailbox.pushMailbox(mailboxId, JSON.stringify(entry), SESSION_TTL_MS);
}

/**
 * In-process wake-ups: when the POST lands on the instance that holds the stream, the stream is woken at once
 * instead of at its next poll. Only a hint — messages always travel through the store.
 */
export class StreamWakeups {
  private readonly waiters = new Map<string, Set<() => void>>();

  /** Resolves after `ms`, on `wake(id)`, or when `signal` aborts. */
  wait(id: string, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        const set = this.waiters.get(id);
        set?.delete(done);
        if (set?.size === 0) this.waiters.delete(id);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal.addEventListener("abort", done, { once: true });
      let set = this.waiters.get(id);
      if (!set) this.waiters.set(id, (set = new Set()));
      set.add(done);
    });
  }

  wake(id: string): void {
    for (const done of [...(this.waiters.get(id) ?? [])]) done();
  }
}

interface SseStreamOptions {
  /** The store that holds the session's mailbox. */
  store: Store;
  /** The session's mailbox (already opened). */
  mailboxId: string;
  /** Epoch ms when the stream closes at the latest (`timing.lifetimeMs` after it opened; also in the session id). */
  hardEnd: number;
  /** The `endpoint` event's data: where the client POSTs its messages. */
  endpoint: string;
  timing: SseTiming;
  wakeups: StreamWakeups;
  /** The GET request's signal: the client went away. */
  signal: AbortSignal;
  /**
   * Close after `timing.unusedMs` if nothing has been posted to the session by then, and tell the client to wait
   * {@link IDLE_CLIENT_RETRY_MS} before reconnecting: for the AI SDK's versioned GETs, which may come from its HTTP
   * transport asking for its optional standalone stream and ignoring it (see `refuseGet` in ./transport.ts; other
   * Streamable HTTP clients' GETs are `405`, since their SDK applies a `retry:` hint to every reconnect).
   */
  closeIfUnused?: boolean;
  /**
   * Called at every session refresh (`timing.refreshMs`): renews what the stream holds besides its session (its
   * stream slot) and says whether it may go on — false closes the stream (its key was revoked). A throw counts as
   * the store being unreachable, like a failed mailbox poll.
   */
  keepAlive?: () => Promise<boolean>;
  /** Called once when the stream has ended, however it ended (its session is closed by then). */
  onEnd?: () => void;
  /** For log lines. */
  requestId: string;
}

/**
 * The event stream of one session: `event: endpoint` first (with a `retry:` hint), then an `event: message` per
 * JSON-RPC response taken from the mailbox, a `: ping` comment every `pingMs`, and a clean close before the function's
 * `maxDuration` — after `lifetimeMs - drainMs` at the first quiet moment with nothing pending, at `lifetimeMs`
 * regardless. The mailbox is closed with the stream, so later POSTs to the session get 404 and the client reconnects.
 */
export function createSseStream(options: SseStreamOptions): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal.addEventListener("abort", onAbort, { once: true });
  let controller!: ReadableStreamDefaultController<Uint8Array>;

  const write = (text: string): boolean => {
    if (stop.signal.aborted) return false;
    try {
      controller.enqueue(encoder.encode(text));
      return true;
    } catch {
      stop.abort();
      return false;
    }
  };

  return new ReadableStream<Uint8Array>({
    start(streamController) {
      controller = streamController;
      const retry = options.closeIfUnused === true ? IDLE_CLIENT_RETRY_MS : SSE_RETRY_MS;
      write(`event: endpoint\ndata: ${options.endpoint}\nretry: ${retry}\n\n`);
      void pumpMailbox(options, write, stop.signal).finally(() => {
        options.signal.removeEventListener("abort", onAbort);
        options.onEnd?.();
        if (stop.signal.aborted) return;
        stop.abort();
        try {
          controller.close();
        } catch {
          // already cancelled by the client
        }
      });
    },
    cancel() {
      stop.abort();
    },
  });
}

async function pumpMailbox(
  options: SseStreamOptions,
  write: (text: string) => boolean,
  stopped: AbortSignal,
): Promise<void> {
  const { mailboxId, timing, wakeups, requestId, hardEnd } = options;
  const mailboxes = options.store.mailbox;
  const opened = Date.now();
  const softEnd = hardEnd - timing.drainMs;
  const unusedEnd = options.closeIfUnused === true ? opened + timing.unusedMs : Infinity;
  let used = false;
  const pending = new Set<string>();
  // Near the end, wait for a quiet moment: a client in the middle of a burst would post into the reconnect gap.
  const quietMs = Math.min(LINGER_MS, timing.drainMs / 4);
  let nextPing = opened + timing.pingMs;
  let nextRefresh = opened + timing.refreshMs;
  let lastActivity = opened;
  let interval = timing.pollMs;
  let failingSince: number | undefined;

  const deliver = (raw: string[]) => {
    for (const item of raw) {
      const entry = parseEntry(item);
      if (!entry) {
        console.warn(`[${requestId}] mcp session: dropped an unreadable mailbox entry`);
        continue;
      }
      if ("open" in entry) {
        used = true;
        pending.add(entry.open);
        continue;
      }
      if ("done" in entry) pending.delete(entry.done);
      for (const message of entry.messages) write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    }
  };

  let storeDown = false;
  let refused = false;
  try {
    while (!stopped.aborted) {
      const now = Date.now();
      if (now >= hardEnd || (now >= softEnd && pending.size === 0 && now - lastActivity >= quietMs)) break;
      if (!used && now >= unusedEnd) break;
      try {
        if (now >= nextRefresh) {
          await mailboxes.openMailbox(mailboxId, SESSION_TTL_MS);
          if (options.keepAlive && !(await options.keepAlive())) {
            refused = true;
            break;
          }
          nextRefresh = now + timing.refreshMs;
        }
        const raw = await mailboxes.drainMailbox(mailboxId);
        failingSince = undefined;
        if (raw.length > 0) {
          lastActivity = Date.now();
          deliver(raw);
        }
      } catch (error) {
        if (failingSince === undefined)
          console.warn(`[${requestId}] mcp session: mailbox unreachable (${errorLabel(error)})`);
        failingSince ??= now;
        if (Date.now() - failingSince >= timing.storeOutageMs) {
          storeDown = true;
          break;
        }
      }
      if (Date.now() >= nextPing) {
        if (!write(": ping\n\n")) break;
        nextPing = Date.now() + timing.pingMs;
      }
      const busy = pending.size > 0 || Date.now() - lastActivity < LINGER_MS;
      interval = busy ? timing.pollMs : Math.min(timing.idlePollMs, Math.ceil(interval * 1.5));
      const nextCheck = Math.min(
        nextPing,
        nextRefresh,
        Date.now() < softEnd ? softEnd : hardEnd,
        used ? Infinity : unusedEnd,
      );
      await wakeups.wait(mailboxId, Math.max(0, Math.min(interval, nextCheck - Date.now())), stopped);
    }
  } finally {
    const close = () =>
      mailboxes
        .closeMailbox(mailboxId)
        .catch((error: unknown) =>
          console.warn(
            `[${requestId}] mcp session: closing the mailbox failed (${errorLabel(error)}); it expires by itself`,
          ),
        );
    if (storeDown) {
      // Not waited for: the stream ends now, and the mailbox expires by itself if the store stays down.
      void close();
    } else {
      // Whatever arrived since the last poll still goes out, then the session is gone: later POSTs get 404.
      if (!stopped.aborted) {
        try {
          deliver(await mailboxes.drainMailbox(mailboxId));
        } catch {
          // the store failed just now: nothing to deliver
        }
      }
      await close();
      // An EventSource shows no reason for a closed stream; a comment at least tells whoever reads the wire. Its
      // reconnect is refused with 403, which says why.
      if (refused) write(": closed: the API key of this session was revoked\n\n");
    }
  }
}

/**
 * Read an exchange answered as an event stream (`serveStreamedExchange`) to its end: each notification is handed to
 * `onNotification` as it arrives (so it can be relayed while the work goes on), and the responses are returned.
 * The SDK writes one JSON message per `data:` line and `:` comments as keep-alives; anything unreadable is dropped.
 */
export async function readStreamedExchange(
  response: Response,
  onNotification: (message: RelayedMessage) => void,
): Promise<RelayedMessage[]> {
  const responses: RelayedMessage[] = [];
  const take = (block: string) => {
    const data = block
      .split(/\r?\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).replace(/^ /, ""))
      .join("\n");
    if (!data) return;
    let parsed: z.ZodSafeParseResult<RelayedMessage>;
    try {
      parsed = jsonRpcMessageSchema.safeParse(JSON.parse(data));
    } catch {
      return;
    }
    if (!parsed.success) return;
    if ("result" in parsed.data || "error" in parsed.data) responses.push(parsed.data);
    else onNotification(parsed.data);
  };
  let buffer = "";
  const decoder = new TextDecoder();
  for await (const chunk of response.body ?? []) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      take(buffer.slice(0, end));
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
    }
  }
  take(buffer + decoder.decode());
  return responses;
}

/** The stream as the legacy transport's clients need it: no buffering, no compression (`no-transform`). */
export const SSE_HEADERS: Record<string, string> = {
  "Content-Type": "text/event-stream; charset=utf-8",
  "Cache-Control": "no-cache, no-transform",
  "X-Accel-Buffering": "no",
};

function parseEntry(raw: string): MailboxEntry | null {
  try {
    const parsed = mailboxEntrySchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
