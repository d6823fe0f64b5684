import "server-only"; // holds the Redis URL and its password: never in a client bundle (Next fails the build)
import { createHash } from "node:crypto";
import type { Requester, UpstashRequest, UpstashResponse } from "@upstash/redis";
import { createClient, ErrorReply, MultiErrorReply, RESP_TYPES } from "redis";
import { setAwakeTimeout } from "@/lib/async";
import { callBudgetMs } from "@/lib/request-scope";
import { REDIS_SOCKET_OPTIONS, RedisUnreachableError, watchRedisClient } from "./redis-link";

/** Options for {@link createNodeRedisRequester}. */
export interface NodeRedisRequesterOptions {
  /**
   * How long a request waits for a (re)connection before failing (`RedisUnreachableError`). Default 2 000 ms of the
   * event loop's awake time (`setAwakeTimeout`), like the command timeout below.
   */
  connectWaitMs?: number;
  /**
   * How long one request (single command, pipeline or transaction) may take. Default 5 000 ms, and never past the
   * current request's deadline plus its answer grace (`lib/request-scope.ts`): no command outlives its request.
   */
  commandTimeoutMs?: number;
}

/**
 * Binary-safe string commands beside the Requester (whose commands are JSON strings, as Upstash's REST API takes
 * them): a job's file is stored as its bytes over TCP, a third smaller than base64 (docs/decisions.md#job-source).
 */
export interface BinaryRedis {
  /** `SET key value PX ttlMs`. Throws the server's refusal (e.g. `OOM command not allowed`) as an Error. */
  set(key: string, value: Uint8Array, ttlMs: number): Promise<void>;
  /** `GET key` as bytes, or null. */
  get(key: string): Promise<Buffer | null>;
}

interface NodeRedisRequester extends Requester {
  binary: BinaryRedis;
  close(): Promise<void>;
}

type Reply = string | number | null | Reply[];
type Command = string[];

/**
 * An `@upstash/redis` Requester that speaks RESP2 over TCP through node-redis, so one store implementation serves
 * both Upstash REST and a self-hosted `REDIS_URL` (docs/decisions.md#redis-requester).
 *
 * - `path` undefined: one command; `["pipeline"]`: many, answered one by one; `["multi-exec"]`: a transaction.
 * - The offline queue is disabled and every request has a deadline, so a Redis outage fails fast (credits and
 *   keys then fail closed) instead of queueing until a serverless function times out.
 * - @upstash/ratelimit prefixes its Lua with `#!lua flags=allow-key-locking`, which only Upstash understands;
 *   {@link stripUpstashScriptFlags} removes it for EVAL / SCRIPT LOAD, and EVALSHA of the original script's hash
 *   is mapped to the hash of the stripped script so the fast path keeps working.
 */
export function createNodeRedisRequester(url: string, options: NodeRedisRequesterOptions = {}): NodeRedisRequester {
  const connectWaitMs = options.connectWaitMs ?? 2_000;
  const commandTimeoutMs = options.commandTimeoutMs ?? 5_000;
  const strippedSha = new Map<string, string>();
  let client: ReturnType<typeof newClient> | undefined;

  function newClient() {
    // Keeps trying in the background (REDIS_SOCKET_OPTIONS); requests meanwhile fail after `connectWaitMs`. Its
    // connection errors are logged by the link, once per outage (lib/store/redis-link.ts).
    const created = createClient({ url, RESP: 2, disableOfflineQueue: true, socket: REDIS_SOCKET_OPTIONS });
    watchRedisClient(created, url);
    created.connect().catch(() => undefined); // failures surface through readyClient and the "error" event
    return created;
  }

  async function readyClient() {
    client ??= newClient();
    const current = client;
    if (current.isReady) return current;
    await new Promise<void>((resolve, reject) => {
      const cancel = setAwakeTimeout(() => {
        current.off("ready", onReady);
        reject(new RedisUnreachableError());
      }, connectWaitMs);
      const onReady = () => {
        cancel();
        resolve();
      };
      current.once("ready", onReady);
    });
    return current;
  }

  function prepare(command: Command): Command {
    const name = command[0]?.toUpperCase();
    if ((name === "EVAL" || name === "EVAL_RO") && command[1] !== undefined) {
      const script = stripUpstashScriptFlags(command[1]);
      if (script !== command[1]) strippedSha.set(sha1(command[1]), sha1(script));
      return [command[0] ?? name, script, ...command.slice(2)];
    }
    if ((name === "EVALSHA" || name === "EVALSHA_RO") && command[1] !== undefined) {
      const mapped = strippedSha.get(command[1].toLowerCase());
      if (mapped) return [command[0] ?? name, mapped, ...command.slice(2)];
    }
    if (name === "SCRIPT" && command[1]?.toUpperCase() === "LOAD" && command[2] !== undefined) {
      return [command[0] ?? name, command[1], stripUpstashScriptFlags(command[2])];
    }
    return command;
  }

  async function single(command: Command): Promise<UpstashResponse<unknown>> {
    const redis = await readyClient();
    try {
      return { result: toReply(await redis.sendCommand(prepare(command))) };
    } catch (error) {
      if (error instanceof ErrorReply) return { error: error.message };
      throw error;
    }
  }

  async function pipeline(commands: Command[]): Promise<UpstashResponse<unknown>[]> {
    const redis = await readyClient();
    // Commands issued in the same tick are written to the socket together by node-redis.
    const settled = await Promise.allSettled(commands.map((command) => redis.sendCommand(prepare(command))));
    return settled.map((outcome) => {
      if (outcome.status === "fulfilled") return { result: toReply(outcome.value) };
      if (outcome.reason instanceof ErrorReply) return { error: outcome.reason.message };
      throw outcome.reason;
    });
  }

  async function transaction(commands: Command[]): Promise<UpstashResponse<unknown>[]> {
    const redis = await readyClient();
    const multi = redis.multi();
    for (const command of commands) multi.addCommand(prepare(command));
    try {
      const replies: unknown[] = await multi.exec();
      return replies.map((reply) => ({ result: toReply(reply) }));
    } catch (error) {
      if (error instanceof MultiErrorReply) {
        const replies: unknown[] = error.replies;
        return replies.map((reply) =>
          reply instanceof ErrorReply ? { error: reply.message } : { result: toReply(reply) },
        );
      }
      if (error instanceof ErrorReply) return commands.map(() => ({ error: error.message }));
      throw error;
    }
  }

  async function dispatch(req: UpstashRequest): Promise<unknown> {
    const kind = req.path?.[0];
    if (kind === "pipeline") return pipeline(toCommands(req.body));
    if (kind === "multi-exec") return transaction(toCommands(req.body));
    if (kind !== undefined) throw new Error(`Unsupported Upstash request path: /${req.path?.join("/")}`);
    return single(toCommand(req.body));
  }

  /** `work` within the command budget (never past the current request's deadline). */
  async function bounded<T>(work: () => Promise<T>): Promise<T> {
    let cancel: (() => void) | undefined;
    const budget = callBudgetMs(commandTimeoutMs);
    // Awake time: a reply that came while this process's loop was held is not late.
    const deadline = new Promise<never>((_, reject) => {
      cancel = setAwakeTimeout(() => reject(new Error(`Redis request timed out after ${budget} ms`)), budget);
    });
    try {
      return await Promise.race([work(), deadline]);
    } finally {
      cancel?.();
    }
  }

  const asBuffers = { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer } };

  return {
    async request<TResult>(req: UpstashRequest): Promise<UpstashResponse<TResult>> {
      // The Requester contract answers a pipeline with an array of responses; its generic type cannot say so.
      return (await bounded(() => dispatch(req))) as UpstashResponse<TResult>;
    },
    binary: {
      async set(key, value, ttlMs) {
        const buffer = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
        await bounded(async () =>
          (await readyClient()).sendCommand(["SET", key, buffer, "PX", String(Math.max(1, Math.round(ttlMs)))]),
        );
      },
      async get(key) {
        const reply = await bounded(async () => (await readyClient()).sendCommand(["GET", key], asBuffers));
        if (reply === null || reply === undefined) return null;
        if (!Buffer.isBuffer(reply)) throw new Error("GET answered something other than a string");
        return reply;
      },
    },
    async close() {
      const current = client;
      client = undefined;
      if (!current) return;
      if (current.isReady) await current.close().catch(() => current.destroy());
      else if (current.isOpen) current.destroy();
    },
  };
}

/** Remove Upstash's `#!lua flags=…` first line, which stock Redis rejects (`Unexpected flag in script shebang`). */
function stripUpstashScriptFlags(script: string): string {
  return /^#!lua[^\n]*flags=[^\n]*allow-key-locking[^\n]*\n/.test(script) ? script.replace(/^[^\n]*\n/, "") : script;
}

function sha1(text: string): string {
  return createHash("sha1").update(text).digest("hex");
}

function toCommand(body: unknown): Command {
  if (!Array.isArray(body) || body.length === 0) throw new Error("Upstash request body must be a command array");
  return body.map((part) => (typeof part === "string" ? part : JSON.stringify(part)));
}

function toCommands(body: unknown): Command[] {
  if (!Array.isArray(body)) throw new Error("Upstash pipeline body must be an array of commands");
  return body.map(toCommand);
}

/** RESP2 replies as @upstash/redis expects them: strings, integers, null and arrays; buffers become strings. */
function toReply(value: unknown): Reply {
  if (value === null || value === undefined) return null;
  if (typeof value === "string" || typeof value === "number") return value;
  if (typeof value === "bigint") return Number(value);
  if (typeof value === "boolean") return value ? 1 : 0;
  if (Buffer.isBuffer(value)) return value.toString("utf8");
  if (Array.isArray(value)) return value.map(toReply);
  if (typeof value === "object") return Object.entries(value).flatMap(([key, item]) => [key, toReply(item)]);
  return String(value);
}
