/**
 * Start a built standalone server for the load bench, the way scripts/smoke.ts does: copied out of the repository
 * (with `.next/static` and `public`, which standalone leaves out), on Redis under a throwaway prefix, with an
 * account and API key made by that checkout's admin CLI. Everything is undone by `stop()`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, existsSync, type WriteStream } from "node:fs";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createClient } from "redis";

const STARTUP_TIMEOUT_MS = 90_000;
const REST_STORE_VARIABLES = ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN", "KV_REST_API_URL", "KV_REST_API_TOKEN"];

export class BenchSetupError extends Error {}

interface StandaloneOptions {
  /** The checkout whose `.next/standalone` is started (and whose admin CLI makes the key). */
  serverDir: string;
  redisUrl: string;
  workers: number;
  /** Extra server variables, applied last. */
  env: Record<string, string>;
}

export interface StandaloneServer {
  url: string;
  pid: number;
  key: string;
  prefix: string;
  logFile: string;
  /** The server's log so far (stdout and stderr). */
  log(): string;
  alive(): boolean;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => probe.once("error", reject).listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

function redisClient(url: string) {
  const client = createClient({ url, RESP: 2, socket: { connectTimeout: 3_000, reconnectStrategy: false } });
  client.on("error", () => undefined);
  return client;
}

async function deletePrefix(redisUrl: string, prefix: string): Promise<number> {
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

async function runAdmin(serverDir: string, env: NodeJS.ProcessEnv, args: string[]): Promise<string> {
  const tsx = path.join(serverDir, "node_modules/.bin/tsx");
  const [command, commandArgs] = existsSync(tsx) ? [tsx, ["--conditions=react-server", "scripts/admin.ts", ...args]] : ["npx", ["tsx", "--conditions=react-server", "scripts/admin.ts", ...args]];
  const child = spawn(command, commandArgs, { cwd: serverDir, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new BenchSetupError(`admin ${args[0]} (in ${serverDir}) exited ${code}: ${stderr.trim()}`);
  const line = stdout.trim().split("\n").at(-1) ?? "";
  if (!line) throw new BenchSetupError(`admin ${args[0]} printed nothing`);
  return line;
}

export async function startStandalone(options: StandaloneOptions): Promise<StandaloneServer> {
  const standalone = path.join(options.serverDir, ".next/standalone");
  if (!existsSync(path.join(standalone, "server.js"))) {
    throw new BenchSetupError(
      `${standalone}/server.js is missing: run \`npm run build\` in ${options.serverDir} first (or pass --url and --key to drive a running server)`,
    );
  }
  const prefix = `ocr:bench:${randomBytes(6).toString("hex")}:`;
  try {
    const client = redisClient(options.redisUrl);
    await client.connect();
    await client.ping();
    client.destroy();
  } catch (error) {
    throw new BenchSetupError(`Redis at ${options.redisUrl} does not answer (start redis-server or set REDIS_URL): ${String(error)}`);
  }

  // A copy outside the repository, so the server cannot resolve a file from the repo's node_modules by accident.
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "ocr-load-"));
  await fs.cp(standalone, dir, { recursive: true, verbatimSymlinks: true });
  await fs.cp(path.join(options.serverDir, ".next/static"), path.join(dir, ".next/static"), { recursive: true });
  if (existsSync(path.join(options.serverDir, "public"))) await fs.cp(path.join(options.serverDir, "public"), path.join(dir, "public"), { recursive: true });

  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of REST_STORE_VARIABLES) delete env[name];
  Object.assign(env, {
    NODE_ENV: "production",
    PORT: String(port),
    HOSTNAME: "127.0.0.1",
    NEXT_TELEMETRY_DISABLED: "1",
    // The allocator setting docs/deploy.md recommends for deployments.
    MALLOC_MMAP_THRESHOLD_: "1048576",
    REDIS_URL: options.redisUrl,
    REDIS_PREFIX: prefix,
    OCR_ENGINE_PROCESSES: String(options.workers),
    // The bench measures the instance, not the per-key limits: one key sends everything.
    RATE_LIMIT_PER_MINUTE: "1000000",
    ACCOUNT_MAX_IN_FLIGHT: "10000",
    FREE_CREDITS: "100000000",
    ...options.env,
  });
  const logFile = path.join(os.tmpdir(), `ocr-load-${prefix.split(":")[2]}.log`);
  const logStream: WriteStream = createWriteStream(logFile);
  let log = "";
  // Its own process group, so stop() can end the server and anything it started, by group id.
  const child: ChildProcess = spawn(process.execPath, ["server.js"], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const collect = (chunk: Buffer) => {
    const text = chunk.toString();
    log = (log + text).slice(-2_000_000);
    logStream.write(text);
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  let exited = false;
  child.once("exit", (code, signal) => {
    exited = true;
    collect(Buffer.from(`\n[bench] server exited (code ${code}, signal ${signal})\n`));
  });
  const url = `http://127.0.0.1:${port}`;

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (!exited && child.pid) {
      const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        child.kill("SIGTERM");
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // already gone
        }
      }, 5_000);
      await gone;
      clearTimeout(timer);
    }
    // Stragglers of the group (engine processes that outlived the server).
    try {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    } catch {
      // none
    }
    await new Promise<void>((resolve) => logStream.end(resolve));
    await fs.rm(dir, { recursive: true, force: true });
    await deletePrefix(options.redisUrl, prefix).catch(() => 0);
  };

  try {
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    for (;;) {
      if (exited) throw new BenchSetupError(`the server exited during startup:\n${log.trim().split("\n").slice(-30).join("\n")}`);
      try {
        const response = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(5_000) });
        await response.body?.cancel();
        if (response.status === 200) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new BenchSetupError(`the server did not answer /api/health within ${STARTUP_TIMEOUT_MS / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const adminEnv: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: options.redisUrl, REDIS_PREFIX: prefix, FREE_CREDITS: env.FREE_CREDITS };
    for (const name of REST_STORE_VARIABLES) delete adminEnv[name];
    const email = `load-${randomBytes(4).toString("hex")}@example.com`;
    await runAdmin(options.serverDir, adminEnv, ["create-user", "--email", email, "--password", randomBytes(18).toString("base64url")]);
    const key = await runAdmin(options.serverDir, adminEnv, ["create-key", "--email", email, "--name", "load-bench"]);
    if (!/^ocr_\S{20,}$/.test(key)) throw new BenchSetupError(`create-key printed something that is not a key: ${key.slice(0, 12)}…`);
    return { url, pid: child.pid!, key, prefix, logFile, log: () => log, alive: () => !exited, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
