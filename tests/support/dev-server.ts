import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { freePort } from "../../tooling";

const ROOT = path.resolve(import.meta.dirname, "../..");
const STARTUP_TIMEOUT_MS = 90_000;

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
 * group, on a free port of 127.0.0.1, with `env` over the test's environment and no Upstash variables. Resolves once
 * `readyPath` answers 200.
 */
export async function startDevServer(
  env: Record<string, string>,
  readyPath = "/signin",
  /** More arguments of scripts/serve.mjs: `--headers-timeout-ms`, `--settings '<json>'`. */
  serveArgs: string[] = [],
): Promise<DevServer> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  // Its own build directory: `npm test` works while `npm run dev` holds .next/dev (next.config.ts reads NEXT_DIST_DIR).
  return spawnServer(
    process.execPath,
    [path.join(ROOT, "scripts/serve.mjs"), "--dev", "--port", String(port), "--hostname", "127.0.0.1", ...serveArgs],
    serverEnv({ NEXT_DIST_DIR: ".next-test", ...env }),
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
