import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { freePort } from "../../tooling";

const ROOT = path.resolve(import.meta.dirname, "../..");
const STARTUP_TIMEOUT_MS = 90_000;

/**
 * The build directories the tests' development servers share (tsconfig.json lists their types, .gitignore them). A
 * cold `next dev` compiles every page it serves (about 80 CPU-seconds for the site's pages); on a build directory a
 * server used before, Turbopack's file-system cache answers instead (about 35). One directory holds one server at a
 * time (Next.js locks <dir>/dev/lock), and vitest runs two files at a time: two directories, leased in turn, so each
 * browser file after the first two starts warm instead of every file compiling its own directory from nothing.
 */
export const TEST_DIST_DIRS = [".next-test", ".next-test-2"] as const;

/** Whether the process `pid` is alive (a lease whose holder died is free). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Make `file` holding our pid, only if it does not exist (O_EXCL): whether we did. */
function createExclusive(file: string): boolean {
  try {
    const fd = openSync(file, "wx");
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
}

/**
 * Drop the lease `file` if the process it names has died. One without a pid is being written, and held, unless it is
 * older than a few seconds (its process died between making and writing it).
 */
function dropIfStale(file: string): void {
  try {
    const holder = Number.parseInt(readFileSync(file, "utf8"), 10);
    const stale = Number.isFinite(holder) ? !alive(holder) : Date.now() - statSync(file).mtimeMs > 10_000;
    if (stale) unlinkSync(file);
  } catch {
    // released (or dropped by another process) meanwhile
  }
}

/**
 * Lease one of TEST_DIST_DIRS for this process, the first free one (the lease is `<dir>.lease` beside it, holding our
 * pid, made with O_EXCL); waits while all are held. `release` gives it back; a lease whose process died is taken over.
 */
export async function leaseDistDir(): Promise<{ dir: string; release: () => void }> {
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    for (const dir of TEST_DIST_DIRS) {
      const file = path.join(ROOT, `${dir}.lease`);
      if (!createExclusive(file)) {
        dropIfStale(file);
        if (!createExclusive(file)) continue;
      }
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        process.off("exit", release);
        try {
          unlinkSync(file);
        } catch {
          // already gone
        }
      };
      process.on("exit", release);
      return { dir, release };
    }
    if (Date.now() > deadline) throw new Error(`no free build directory among ${TEST_DIST_DIRS.join(", ")}`);
    await sleep(250);
  }
}

export interface DevServer {
  baseUrl: string;
  port: number;
  /** Everything the server printed so far (stdout and stderr). */
  output(): string;
  stop(): Promise<void>;
}

/** The test's environment with `env` over it, telemetry off and no Upstash variables or NODE_ENV (unless in `env`). */
function serverEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, NEXT_TELEMETRY_DISABLED: "1", ...env };
  for (const name of [
    "UPSTASH_REDIS_REST_URL",
    "UPSTASH_REDIS_REST_TOKEN",
    "KV_REST_API_URL",
    "KV_REST_API_TOKEN",
    "NODE_ENV",
  ]) {
    if (!(name in env)) delete childEnv[name];
  }
  return childEnv;
}

/** Spawn a server in its own process group; resolves once `isReady` says so (checked every 250 ms). */
async function spawnServer(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  baseUrl: string,
  port: number,
  isReady: (output: string) => Promise<boolean>,
): Promise<DevServer> {
  const child: ChildProcess = spawn(command, args, {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));

  const stop = async (): Promise<void> => {
    if (!child.pid || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    process.kill(-child.pid, "SIGTERM");
    const timeout = sleep(5_000).then(() => "timeout");
    if ((await Promise.race([exited, timeout])) === "timeout" && child.exitCode === null)
      process.kill(-child.pid, "SIGKILL");
  };

  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      // e.g. another `next dev` already holds <dist dir>/dev/lock for this checkout.
      throw new Error(`the dev server exited with code ${child.exitCode} before answering:\n${output}`);
    }
    if (await isReady(output)) return { baseUrl, port, output: () => output, stop };
    await sleep(250);
  }
  await stop();
  throw new Error(`the dev server did not answer within ${STARTUP_TIMEOUT_MS / 1000} s:\n${output}`);
}

/**
 * Start the development server the way `npm run dev` does — Next.js inside scripts/serve.mjs — in its own process
 * group, on a free port of 127.0.0.1, with `env` over the test's environment and no Upstash variables, on a leased
 * build directory (leaseDistDir: `npm test` works while `npm run dev` holds .next/dev; next.config.ts reads
 * NEXT_DIST_DIR). Resolves once `readyPath` answers 200.
 */
export async function startDevServer(
  env: Record<string, string>,
  readyPath = "/signin",
  /** More arguments of scripts/serve.mjs: `--headers-timeout-ms`, `--settings '<json>'`. */
  serveArgs: string[] = [],
): Promise<DevServer> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const lease = await leaseDistDir();
  try {
    const server = await spawnServer(
      process.execPath,
      [path.join(ROOT, "scripts/serve.mjs"), "--dev", "--port", String(port), "--hostname", "127.0.0.1", ...serveArgs],
      serverEnv({ ...env, NEXT_DIST_DIR: lease.dir }),
      baseUrl,
      port,
      async () => {
        try {
          return (await fetch(`${baseUrl}${readyPath}`, { redirect: "manual" })).status === 200;
        } catch {
          return false; // not listening yet
        }
      },
    );
    return { ...server, stop: () => server.stop().finally(lease.release) };
  } catch (error) {
    lease.release();
    throw error;
  }
}

/**
 * Run `npm run dev` itself — the check of the Node version, the engine bundle on watch, the server with its default
 * hostname (localhost) — with `args` after `--` (`["-p", "4000"]`) and `env` over the test's environment. Resolves as
 * soon as the server listens, before any page has been asked for (so the first page a test opens is the first compiled).
 */
export async function startNpmRunDev(options: {
  port: number;
  args?: string[];
  env?: Record<string, string>;
}): Promise<DevServer> {
  const { port, args = [], env = {} } = options;
  return spawnServer(
    "npm",
    ["run", "dev", ...(args.length > 0 ? ["--", ...args] : [])],
    serverEnv(env),
    `http://localhost:${port}`,
    port,
    async (output) => output.includes(`[serve] development server on http://localhost:${port}`),
  );
}

/** The development server compiles each route on its first request (20 s and more on a busy machine): do it now. */
export async function warmRoutes(
  baseUrl: string,
  routes: ReadonlyArray<readonly ["GET" | "POST", string]>,
): Promise<void> {
  for (const [method, route] of routes) {
    await fetch(`${baseUrl}${route}`, { method, redirect: "manual" }).then((response) => response.body?.cancel());
  }
}
