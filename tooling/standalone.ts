import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, type WriteStream } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createClient } from "redis";
import { freePort } from "./ports";

/*
 * The built standalone server (`.next/standalone/server.js`, what a Vercel function gets), started the way the smoke
 * test (scripts/smoke.ts) and the load bench (bench/standalone.ts) need it: copied out of the checkout, so a file
 * missing from `outputFileTracingIncludes` cannot be found in the checkout's node_modules by accident; on a TCP
 * Redis under a prefix of the caller's; in its own process group, so `stop()` ends it and the engine processes it
 * started.
 */

/** How long the server may take to answer `/api/health` after it was spawned. */
const STARTUP_TIMEOUT_MS = 90_000;
/** The server's log kept in memory (the end of it); the whole log goes to `logFile` when one is given. */
const LOG_KEPT_CHARS = 2_000_000;
/** The store variables a server started here never inherits: only the TCP Redis under the caller's prefix. */
export const REST_STORE_VARIABLES = [
  "UPSTASH_REDIS_REST_URL",
  "UPSTASH_REDIS_REST_TOKEN",
  "KV_REST_API_URL",
  "KV_REST_API_TOKEN",
];

/** A failure to set the server up (no build, no Redis, no answer), as opposed to a failure of what it is used for. */
export class StandaloneSetupError extends Error {}

export interface StandaloneOptions {
  /** The checkout whose `.next/standalone` is started. */
  serverDir: string;
  redisUrl: string;
  /** Every key of the server goes under it (`REDIS_PREFIX`). */
  prefix: string;
  /** The temporary copy's name starts with it (`ocr-smoke-`). */
  label: string;
  /** Server variables, applied last (over `NODE_ENV`, `PORT`, the Redis ones …). */
  env?: Record<string, string>;
  /** Where the server's whole log is written as it comes (default: kept in memory only). */
  logFile?: string;
}

export interface StandaloneServer {
  url: string;
  pid: number;
  /** The server's log so far (stdout and stderr; the last 2 MB). */
  log(): string;
  alive(): boolean;
  /** End the server's process group, remove the copy. Idempotent. The caller's Redis keys stay (see `deletePrefix`). */
  stop(): Promise<void>;
}

/** Copy `<serverDir>/.next/standalone` (plus `.next/static` and `public`, which standalone leaves out) to a temporary folder. */
export async function copyStandalone(serverDir: string, label: string): Promise<string> {
  const standalone = path.join(serverDir, ".next/standalone");
  if (!existsSync(path.join(standalone, "server.js"))) {
    throw new StandaloneSetupError(
      `${standalone}/server.js is missing: run \`npm run build\` in ${serverDir} first (next.config.ts must keep output: "standalone")`,
    );
  }
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), label));
  await fs.cp(standalone, dir, { recursive: true, verbatimSymlinks: true });
  await fs.cp(path.join(serverDir, ".next/static"), path.join(dir, ".next/static"), { recursive: true });
  if (existsSync(path.join(serverDir, "public")))
    await fs.cp(path.join(serverDir, "public"), path.join(dir, "public"), { recursive: true });
  return dir;
}

/** Start a copy of the standalone server on a free port of 127.0.0.1; resolves once `/api/health` answers 200. */
export async function startStandalone(options: StandaloneOptions): Promise<StandaloneServer> {
  await assertRedisAnswers(options.redisUrl);
  const dir = await copyStandalone(options.serverDir, options.label);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of REST_STORE_VARIABLES) delete env[name];
  Object.assign(env, {
    NODE_ENV: "production",
    PORT: String(port),
    HOSTNAME: "127.0.0.1",
    NEXT_TELEMETRY_DISABLED: "1",
    // The allocator setting docs/deploy.md recommends for deployments.
    MALLOC_MMAP_THRESHOLD_: env.MALLOC_MMAP_THRESHOLD_ ?? "1048576",
    REDIS_URL: options.redisUrl,
    REDIS_PREFIX: options.prefix,
    ...options.env,
  });
  const logStream: WriteStream | undefined = options.logFile ? createWriteStream(options.logFile) : undefined;
  let log = "";
  const child: ChildProcess = spawn(process.execPath, ["server.js"], {
    cwd: dir,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const collect = (chunk: Buffer) => {
    const text = chunk.toString();
    log = (log + text).slice(-LOG_KEPT_CHARS);
    logStream?.write(text);
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  let exited = false;
  child.once("exit", (code, signal) => {
    exited = true;
    collect(Buffer.from(`\n[${options.label.replace(/-$/, "")}] server exited (code ${code}, signal ${signal})\n`));
  });
  const url = `http://127.0.0.1:${port}`;

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (!exited && child.pid) {
      const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      killGroup(child, "SIGTERM");
      const timer = setTimeout(() => killGroup(child, "SIGKILL"), 5_000);
      await gone;
      clearTimeout(timer);
    }
    // Stragglers of the group (engine processes that outlived the server).
    killGroup(child, "SIGKILL");
    if (logStream) await new Promise<void>((resolve) => logStream.end(resolve));
    await fs.rm(dir, { recursive: true, force: true });
  };

  try {
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    for (;;) {
      if (exited)
        throw new StandaloneSetupError(
          `the server exited during startup:\n${log.trim().split("\n").slice(-30).join("\n")}`,
        );
      try {
        const response = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(5_000) });
        await response.body?.cancel();
        if (response.status === 200) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline)
        throw new StandaloneSetupError(`the server did not answer /api/health within ${STARTUP_TIMEOUT_MS / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, pid: child.pid!, log: () => log, alive: () => !exited, stop };
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

function redisClient(url: string) {
  const client = createClient({ url, RESP: 2, socket: { connectTimeout: 3_000, reconnectStrategy: false } });
  client.on("error", () => undefined);
  return client;
}

export async function assertRedisAnswers(redisUrl: string): Promise<void> {
  const client = redisClient(redisUrl);
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    throw new StandaloneSetupError(
      `Redis at ${redisUrl} does not answer (start redis-server or set REDIS_URL): ${String(error)}`,
    );
  } finally {
    if (client.isOpen) client.destroy();
  }
}

/** Delete every key under `prefix` (a server's, at its end); the number deleted. */
export async function deletePrefix(redisUrl: string, prefix: string): Promise<number> {
  const client = redisClient(redisUrl);
  await client.connect();
  try {
    let count = 0;
    for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) {
      if (keys.length > 0) count += await client.unlink(keys);
    }
    return count;
  } finally {
    client.destroy();
  }
}
