/**
 * Start a built standalone server for the load bench (tooling/standalone.ts, as the smoke test does), on Redis under
 * a throwaway prefix, with an account and API key made by that checkout's admin CLI. Everything is undone by
 * `stop()`, the prefix's keys included.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  REST_STORE_VARIABLES,
  StandaloneSetupError,
  deletePrefix,
  startStandalone as startServer,
  type StandaloneServer as Server,
} from "../tooling";

/** A failure to set the bench up (bad options, no build, no Redis), reported without a stack. */
export const BenchSetupError = StandaloneSetupError;

interface StandaloneOptions {
  /** The checkout whose `.next/standalone` is started (and whose admin CLI makes the key). */
  serverDir: string;
  redisUrl: string;
  workers: number;
  /** Extra server variables, applied last. */
  env: Record<string, string>;
}

export interface StandaloneServer extends Server {
  key: string;
  prefix: string;
  logFile: string;
}

async function runAdmin(serverDir: string, env: NodeJS.ProcessEnv, args: string[]): Promise<string> {
  const tsx = path.join(serverDir, "node_modules/.bin/tsx");
  const [command, commandArgs] = existsSync(tsx)
    ? [tsx, ["--conditions=react-server", "scripts/admin.ts", ...args]]
    : ["npx", ["tsx", "--conditions=react-server", "scripts/admin.ts", ...args]];
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
  const prefix = `ocr:bench:${randomBytes(6).toString("hex")}:`;
  const logFile = path.join(os.tmpdir(), `ocr-load-${prefix.split(":")[2]}.log`);
  const env = {
    OCR_ENGINE_PROCESSES: String(options.workers),
    // The bench measures the instance, not the per-key limits: one key sends everything.
    RATE_LIMIT_PER_MINUTE: "1000000",
    ACCOUNT_MAX_IN_FLIGHT: "10000",
    FREE_CREDITS: "100000000",
    ...options.env,
  };
  const server = await startServer({
    serverDir: options.serverDir,
    redisUrl: options.redisUrl,
    prefix,
    label: "ocr-load-",
    env,
    logFile,
  });
  const stop = async () => {
    await server.stop();
    await deletePrefix(options.redisUrl, prefix).catch(() => 0);
  };
  try {
    const adminEnv: NodeJS.ProcessEnv = {
      ...process.env,
      REDIS_URL: options.redisUrl,
      REDIS_PREFIX: prefix,
      FREE_CREDITS: env.FREE_CREDITS,
    };
    for (const name of REST_STORE_VARIABLES) delete adminEnv[name];
    const email = `load-${randomBytes(4).toString("hex")}@example.com`;
    await runAdmin(options.serverDir, adminEnv, [
      "create-user",
      "--email",
      email,
      "--password",
      randomBytes(18).toString("base64url"),
    ]);
    const key = await runAdmin(options.serverDir, adminEnv, ["create-key", "--email", email, "--name", "load-bench"]);
    if (!/^ocr_\S{20,}$/.test(key))
      throw new BenchSetupError(`create-key printed something that is not a key: ${key.slice(0, 12)}…`);
    return { ...server, key, prefix, logFile, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
