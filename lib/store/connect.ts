import "server-only"; // connects with the store's credentials: never in a client bundle (Next fails the build)
import { Redis, type Requester } from "@upstash/redis";
import { callBudgetMs } from "@/lib/request-scope";
import { createNodeRedisRequester, type BinaryRedis, type NodeRedisRequesterOptions } from "./node-redis-requester";

/**
 * `new Redis(requester)` has no options argument and would JSON-parse every string it reads (a key named "123"
 * would come back as a number). The store parses replies itself, so this subclass switches that off, as the
 * REST constructor's `automaticDeserialization: false` does.
 */
class RawRedis extends Redis {
  constructor(requester: Requester) {
    super(requester);
    this.opts = { automaticDeserialization: false };
  }
}

/** Options for the REST client. */
interface RestRedisOptions {
  url: string;
  token: string;
  /** Per-request deadline. Default 5 000 ms, and never past the current request's deadline (lib/request-scope.ts). */
  timeoutMs?: number;
}

/** Upstash (or Vercel KV) over HTTPS. */
export function createRestRedis({ url, token, timeoutMs = 5_000 }: RestRedisOptions): Redis {
  return new Redis({
    url,
    token,
    automaticDeserialization: false,
    enableTelemetry: false,
    // Fail closed within seconds rather than after the client's default five retries.
    retry: { retries: 2, backoff: (attempt) => 50 * 2 ** attempt },
    signal: () => AbortSignal.timeout(callBudgetMs(timeoutMs)),
  });
}

/**
 * A self-hosted Redis (`redis://` or `rediss://`) over TCP, through the node-redis requester; `binary` stores bytes
 * as they are (job files), which the REST API cannot.
 */
export function createTcpRedis(
  url: string,
  options?: NodeRedisRequesterOptions,
): { redis: Redis; binary: BinaryRedis; close: () => Promise<void> } {
  const requester = createNodeRedisRequester(url, options);
  return { redis: new RawRedis(requester), binary: requester.binary, close: () => requester.close() };
}
