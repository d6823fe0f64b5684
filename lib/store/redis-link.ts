import { setAwakeTimeout } from "@/lib/async";
import { errorLabel } from "@/lib/error-log";

/*
 * Every TCP connection of the process to a Redis (the store's requester, the BullMQ queues and workers of jobs and
 * webhooks: seven at a server's start) reports its state here, and the log says an outage once per Redis address:
 *
 *   [store] Redis at 127.0.0.1:6379 is not reachable (ECONNREFUSED): …; retrying until it answers
 *   [store] Redis at 127.0.0.1:6379 answers again (it was unreachable for 41 s)
 *
 * instead of a line per client and reconnect attempt, and a `Connection timeout` stack from each BullMQ queue. A
 * connection that fails and is back within REPORT_AFTER_MS of the loop's awake time is not an outage: that is what a
 * server's start looks like on a busy machine, where Next.js loads every route module synchronously for seconds
 * right after the connections were opened, and node-redis's connect timer fires before the completed connect is
 * seen (docs/decisions.md#quiet-boot).
 */

/** How long (event-loop awake time) a connection may stay down before the outage is logged. */
const REPORT_AFTER_MS = 2_000;

/** node-redis's socket options for every client of the service: the connect timeout, and reconnects 0.1–2 s apart. */
export const REDIS_SOCKET_OPTIONS = {
  // Only a host that drops packets needs it: a refused or reset connection fails at once. Requests do not wait for it
  // (the requester's own wait is 2 s of awake time).
  connectTimeout: 5_000,
  reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 2_000),
};

/** A request that found no connection to Redis within its wait: the outage is logged once, by the link. */
export class RedisUnreachableError extends Error {
  constructor() {
    super("Redis is not reachable");
    this.name = "RedisUnreachableError";
  }
}

/** What a node-redis client (or anything emitting the same events) offers. */
interface WatchedClient {
  on(event: "error", listener: (error: unknown) => void): unknown;
  on(event: "ready" | "end", listener: () => void): unknown;
}

interface Link {
  address: string;
  /** The clients whose connection is down now. */
  down: Set<WatchedClient>;
  /** When the first of them went down (ms). */
  since: number;
  reported: boolean;
  cause: string;
  cancelReport?: () => void;
}

// On globalThis: Next bundles lib/store into instrumentation and each route, and every copy must share one state.
const slot = globalThis as typeof globalThis & {
  __ocrRedisLinks?: Map<string, Link>;
  __ocrRedisErrors?: WeakSet<object>;
};
const links = (slot.__ocrRedisLinks ??= new Map());
/** Errors a watched client emitted: BullMQ re-emits them on its queues and workers, where they are not logged again. */
const seenErrors = (slot.__ocrRedisErrors ??= new WeakSet());

/** `host:port` of a Redis URL, without its credentials. */
export function redisAddress(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || "6379"}`;
  } catch {
    return "(invalid REDIS_URL)";
  }
}

/** Why a connection failed, safe to log: node-redis's connection errors carry no credentials, but say it in a word. */
function causeOf(error: unknown): string {
  if (error instanceof Error && error.name === "ConnectionTimeoutError") return "connect timed out";
  if (error instanceof Error && error.message === "Connection timeout") return "connect timed out";
  if (error instanceof Error && error.name === "SocketClosedUnexpectedlyError") return "connection closed";
  return errorLabel(error);
}

/** Report `client`'s connection state to the link of `url`'s address; returns the client. */
export function watchRedisClient<C extends WatchedClient>(client: C, url: string): C {
  const address = redisAddress(url);
  let link = links.get(address);
  if (!link) {
    link = { address, down: new Set(), since: 0, reported: false, cause: "" };
    links.set(address, link);
  }
  const current = link;
  client.on("error", (error) => {
    if (typeof error === "object" && error !== null) seenErrors.add(error);
    current.cause = causeOf(error);
    if (current.down.size === 0 && !current.reported) current.since = Date.now();
    current.down.add(client);
    if (!current.reported && !current.cancelReport) {
      current.cancelReport = setAwakeTimeout(() => report(current), REPORT_AFTER_MS, { unref: true });
    }
  });
  client.on("ready", () => up(current, client));
  // Closed on purpose (shutdown, a test's end): no longer waited for.
  client.on("end", () => up(current, client, { closed: true }));
  return client;
}

function report(link: Link): void {
  link.cancelReport = undefined;
  if (link.down.size === 0 || link.reported) return;
  link.reported = true;
  console.error(
    `[store] Redis at ${link.address} is not reachable (${link.cause}): requests that need it answer 503 unavailable, ` +
      "jobs and webhook deliveries wait; retrying until it answers",
  );
}

function up(link: Link, client: WatchedClient, { closed = false } = {}): void {
  if (!link.down.delete(client) || link.down.size > 0) return;
  link.cancelReport?.();
  link.cancelReport = undefined;
  if (link.reported && !closed) {
    console.info(
      `[store] Redis at ${link.address} answers again (it was unreachable for ${Math.round((Date.now() - link.since) / 1000)} s)`,
    );
  }
  link.reported = false;
}

const CONNECTION_ERROR_NAMES = new Set([
  "RedisUnreachableError",
  "ConnectionTimeoutError",
  "SocketClosedUnexpectedlyError",
  "ClientClosedError",
  "ClientOfflineError",
  "ReconnectStrategyError",
]);
const CONNECTION_ERROR_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
]);

/**
 * Whether `error` (or its cause) is a lost or missing connection to Redis, which the link reports once: callers that
 * log their own failures (the store's calls, the job runner, the BullMQ queues) leave those out.
 */
export function isRedisConnectionError(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    if (seenErrors.has(current) || CONNECTION_ERROR_NAMES.has(current.name)) return true;
    if (current.message === "Connection timeout" || current.message === "The client is closed") return true;
    const code = (current as Error & { code?: unknown }).code;
    if (typeof code === "string" && CONNECTION_ERROR_CODES.has(code)) return true;
  }
  return false;
}

/** A listener for a BullMQ queue's or worker's `error` event: one line per error, except lost connections. */
export function logQueueErrors(label: string): (error: unknown) => void {
  return (error) => {
    if (!isRedisConnectionError(error)) console.warn(`[${label}] queue: ${errorLabel(error)}`);
  };
}
