import { spawn, type ChildProcess } from "node:child_process";
import { createClient } from "redis";
import { getStore } from "@/lib/store";
import { sleep } from "../api/support";

/*
 * A redis-server of the test's own, to stop mid-run: the REST and MCP store-outage suites share it.
 */

const REDIS_SERVER = process.env.REDIS_SERVER_BIN ?? "redis-server";

export class OwnRedis {
  private child: ChildProcess | undefined;
  constructor(
    readonly port: number,
    private readonly dir: string,
    /** More redis-server options, e.g. `["--maxmemory", "8mb"]`. */
    private readonly extraArgs: string[] = [],
  ) {}

  get running(): boolean {
    return this.child?.exitCode === null;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const child = spawn(
      REDIS_SERVER,
      [
        "--port",
        String(this.port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        this.dir,
        "--dbfilename",
        "dump.rdb",
        ...this.extraArgs,
      ],
      { stdio: "ignore" },
    );
    this.child = child;
    const failed = new Promise<never>((_, reject) => {
      child.once("error", (error) => reject(new Error(`could not start ${REDIS_SERVER}: ${error.message}`)));
      child.once("exit", (code) => reject(new Error(`${REDIS_SERVER} exited with ${code}`)));
    });
    failed.catch(() => undefined);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const ready = await Promise.race([this.ping(), failed]);
      if (ready) return;
      if (Date.now() > deadline) throw new Error(`redis-server on port ${this.port} did not start`);
      await sleep(50);
    }
  }

  /** SHUTDOWN SAVE: the server writes its data and exits (a managed Redis comes back with it). */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    const client = createClient({ url: this.url, RESP: 2, socket: { reconnectStrategy: false } });
    client.on("error", () => undefined);
    await client.connect();
    await client.sendCommand(["SHUTDOWN", "SAVE"]).catch(() => undefined);
    client.destroy();
    await exited;
    this.child = undefined;
  }

  /** SIGSTOP: the server stops answering but keeps its connections open (a Redis stuck in a long command). */
  pause(): void {
    this.child?.kill("SIGSTOP");
  }

  resume(): void {
    this.child?.kill("SIGCONT");
  }

  /**
   * SIGKILL, and wait until the process is gone: a server started at once on the same port would otherwise find it
   * still bound and exit (CI saw `redis-server exited with 1` on the restart right after a kill).
   */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await exited;
  }

  private async ping(): Promise<boolean> {
    const client = createClient({ url: this.url, RESP: 2, socket: { connectTimeout: 500, reconnectStrategy: false } });
    client.on("error", () => undefined);
    try {
      await client.connect();
      return (await client.ping()) === "PONG";
    } catch {
      return false;
    } finally {
      if (client.isOpen) client.destroy();
    }
  }
}

/** Wait until the app's own store client has reconnected. */
export async function waitForStore(): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await getStore().ping();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(100);
    }
  }
}
