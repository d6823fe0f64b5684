import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";

/*
 * On a Node older than 22.13 the service would start, read images, and answer every PDF "corrupt" (pdf.js fails
 * inside getDocument). `npm run dev`, `npm start`, `npm test` and `npm run build` stop first, naming the version and
 * the one-line install. OCR_CHECK_NODE_VERSION stands in for the running version.
 */
const ROOT = path.resolve(import.meta.dirname, "../..");

function run(command: string, args: string[], version: string) {
  return spawnSync(command, args, {
    cwd: ROOT,
    env: { ...process.env, OCR_CHECK_NODE_VERSION: version },
    encoding: "utf8",
    timeout: 60_000,
  });
}

describe("the Node check", () => {
  it("npm run dev on Node 20 exits 1 at once with the required version and the install line, starting nothing", () => {
    const result = run("npm", ["run", "dev"], "20.20.2");
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("This project needs Node.js 22.13 or newer (Node 24 recommended); this is Node.js 20.20.2");
    expect(result.stderr).toContain('npm install -g --prefix "$HOME/.local/node24" node@24');
    // Nothing was started: no engine bundle build, no server.
    expect(result.stdout).not.toMatch(/\[serve\]|Ready|engine/);
  });

  it.each(["start", "test", "build"])("npm %s runs the same check first", (script) => {
    const result = run("npm", ["run", script], "22.12.0");
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("this is Node.js 22.12.0");
  });

  it("passes Node 22.13 and newer", () => {
    for (const version of ["22.13.0", "24.21.0", "v25.0.0"]) {
      expect(run(process.execPath, ["scripts/check-node.cjs"], version).status, version).toBe(0);
    }
  });
});
