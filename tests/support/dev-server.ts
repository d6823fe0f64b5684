import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const ROOT = path.resolve(import.meta.dirname, "../..");

export interface DevServer {
  baseUrl: string;
  port: number;
  /** Everything the server printed so far (stdout and stderr). */
  output(): string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Start the development server the way `npm run dev` does — Next.js inside scripts/serve.mjs — in its own process
 * group, on a free port of 127.0.0.1, with `env` over the test's environment and no Upstash variables. Resolves once
 * `readyPath` answers 200.
 */
export async function startDevServer(env: Record<string, string>, readyPath = "/signin"): Promise<DevServer> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  // Its own build directory: `npm test` works while `npm run dev` holds .next/dev (next.config.ts reads NEXT_DIST_DIR).
  const childEnv: NodeJS.ProcessEnv = { ...process.env, NEXT_TELEMETRY_DISABLED: "1", NEXT_DIST_DIR: ".next-test", ...env };
  for (const name of ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN", "KV_REST_API_URL", "KV_REST_API_TOKEN", "NODE_ENV"]) {
    if (!(name in env)) delete childEnv[name];
  }
  const child: ChildProcess = spawn(
    process.execPath,
    [path.join(ROOT, "scripts/serve.mjs"), "--dev", "--port", String(port), "--hostname", "127.0.0.1"],
    { cwd: ROOT, env: childEnv, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));

  const stop = async (): Promise<void> => {
    if (!child.pid || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    process.kill(-child.pid, "SIGTERM");
    const timeout = sleep(5_000).then(() => "timeout");
    if ((await Promise.race([exited, timeout])) === "timeout" && child.exitCode === null) process.kill(-child.pid, "SIGKILL");
  };

  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      // e.g. another `next dev` already holds .next/dev/lock for this checkout.
      throw new Error(`the dev server exited with code ${child.exitCode} before answering:\n${output}`);
    }
    try {
      const response = await fetch(`${baseUrl}${readyPath}`, { redirect: "manual" });
      if (response.status === 200) return { baseUrl, port, output: () => output, stop };
    } catch {
      // not listening yet
    }
    await sleep(250);
  }
  await stop();
  throw new Error(`the dev server did not answer within 90 s:\n${output}`);
}
