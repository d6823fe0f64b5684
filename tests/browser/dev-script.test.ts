import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../tooling";
import { leaseDistDir, startNpmRunDev, type DevServer } from "../support/dev-server";

const ROOT = path.resolve(import.meta.dirname, "../..");

/** Whether the process `pid` is alive (a zombie counts as gone). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** The parent of process `pid` (Linux: field 4 of /proc/<pid>/stat, after the parenthesised name). */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

let distDir = "";
let releaseDistDir = () => {};
const servers: DevServer[] = [];
/** Servers to kill by process id at the end: one left behind (without the fix) is in no process group we stop. */
const serverPids: number[] = [];

/** `npm run dev`'s processes (npm → scripts/dev.mjs → scripts/serve.mjs, which runs Next.js) when one of them dies. */
describe("npm run dev, its script killed", () => {
  beforeAll(async () => {
    ({ dir: distDir, release: releaseDistDir } = await leaseDistDir());
  });

  afterAll(async () => {
    for (const server of servers) await server.stop();
    for (const pid of serverPids) if (alive(pid)) process.kill(pid, "SIGKILL");
    releaseDistDir();
  });

  // Issue 39: `kill -9` of scripts/dev.mjs left scripts/serve.mjs serving on its own — the port and the build
  // directory's lock held, no engine rebuilds — and the next `npm run dev` stopped at "Another next dev server is
  // already running".
  it("kill -9 of scripts/dev.mjs stops its server too, and the next npm run dev starts on the same port", async () => {
    const port = await freePort();
    const env = { NEXT_DIST_DIR: distDir, REDIS_URL: "" };
    const first = await startNpmRunDev({ port, args: ["-p", String(port)], env });
    servers.push(first);
    // Next.js writes the server's process id into the build directory's lock.
    const { pid: serverPid } = JSON.parse(readFileSync(path.join(ROOT, distDir, "dev", "lock"), "utf8")) as {
      pid: number;
    };
    serverPids.push(serverPid);
    const devScriptPid = parentOf(serverPid);
    expect(readFileSync(`/proc/${devScriptPid}/cmdline`, "utf8")).toContain("scripts/dev.mjs");

    process.kill(devScriptPid, "SIGKILL");
    await expect.poll(() => alive(serverPid), { timeout: 15_000 }).toBe(false);
    await expect(fetch(`http://localhost:${port}/api/health`)).rejects.toThrow();

    const second = await startNpmRunDev({ port, args: ["-p", String(port)], env });
    servers.push(second);
    expect(second.output()).not.toContain("already running");
    expect((await fetch(`${second.baseUrl}/api/health`)).status).toBeLessThan(500);
  }, 240_000);
});
