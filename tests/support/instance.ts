import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "../..");
const TSX = path.join(ROOT, "node_modules/.bin/tsx");

export interface Instance {
  /** `http://127.0.0.1:<port>`; empty for a worker (no HTTP). */
  baseUrl: string;
  name: string;
  pid: number;
  output(): string;
  /** SIGTERM and wait (the pages in hand finish). */
  stop(): Promise<void>;
  /** SIGKILL of the process and its engine processes (a machine that died). */
  kill(): Promise<void>;
  exited(): boolean;
}

/**
 * A process of the service on the test's Redis: a server instance (tests/support/instance-main.ts: the route
 * handlers and the job runner, without Next) or `npm run worker`'s script (no HTTP). Each has its own engine
 * processes, in its own process group (so `kill()` takes them too).
 */
export async function startInstance(
  kind: "server" | "worker",
  name: string,
  env: Record<string, string>,
  /** Overrides of the modules' settings (lib/settings), passed as `--settings '<json>'` to the process's `main`. */
  settings: Record<string, Record<string, unknown>> = {},
): Promise<Instance> {
  const script =
    kind === "server" ? path.join(ROOT, "tests/support/instance-main.ts") : path.join(ROOT, "scripts/worker.ts");
  const args = ["--name", name, "--settings", JSON.stringify(settings)];
  const child: ChildProcess = spawn(TSX, ["--conditions=react-server", script, ...args], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: "test", LOG_REQUESTS: "false", ...env },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const ready = kind === "server" ? /ready (\d+)/ : /\[worker\] .* reading job pages/;
  const deadline = Date.now() + 120_000;
  let match: RegExpExecArray | null = null;
  while (!(match = ready.exec(output))) {
    if (child.exitCode !== null) throw new Error(`${name} exited at start (${child.exitCode}):\n${output}`);
    if (Date.now() > deadline) throw new Error(`${name} did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const exitedPromise = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  };
  return {
    baseUrl: kind === "server" ? `http://127.0.0.1:${match[1]}` : "",
    name,
    pid: child.pid!,
    output: () => output,
    exited: () => child.exitCode !== null || child.signalCode !== null,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      signalGroup("SIGTERM");
      const timer = setTimeout(() => signalGroup("SIGKILL"), 30_000);
      await exitedPromise;
      clearTimeout(timer);
      signalGroup("SIGKILL"); // engine processes left behind, if any
    },
    async kill() {
      signalGroup("SIGKILL");
      await exitedPromise;
    },
  };
}
