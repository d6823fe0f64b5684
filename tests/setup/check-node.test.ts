import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

/*
 * On a Node older than 22.13 the service would start, read images, and answer every PDF "corrupt" (pdf.js fails
 * inside getDocument). `npm run dev`, `npm start`, `npm test` and `npm run build` stop first, and `npm install` ends,
 * naming the version and the one-line install. OCR_CHECK_NODE_VERSION stands in for the running version.
 */
const ROOT = path.resolve(import.meta.dirname, "../..");
/** The machine's own Node (Debian's, 20 here): npm's engine check reads the Node that runs npm, so it takes a real one. */
const OLD_NODE = "/usr/bin/node";
const oldNodeVersion = spawnSync(OLD_NODE, ["-p", "process.versions.node"], { encoding: "utf8" }).stdout?.trim() ?? "";
const [oldMajor = 0, oldMinor = 0] = oldNodeVersion.split(".").map(Number);
const hasOldNode = oldMajor > 0 && (oldMajor < 22 || (oldMajor === 22 && oldMinor < 13));
const INSTALL_LINE =
  'npm install -g --prefix "$HOME/.local/node24" node@24 && export PATH="$HOME/.local/node24/bin:$PATH"';

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
    expect(result.stderr).toContain(
      "This project needs Node.js 22.13 or newer (Node 24 recommended); this is Node.js 20.20.2",
    );
    expect(result.stderr).toContain(INSTALL_LINE);
    // Nothing was started: no engine bundle build, no server.
    expect(result.stdout).not.toMatch(/\[serve\]|Ready|engine/);
  });

  it.each(["start", "test", "build"])("npm %s runs the same check first", (script) => {
    const result = run("npm", ["run", script], "22.12.0");
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("this is Node.js 22.12.0");
  });

  // Issue 29 point 12: npm runs a project's own preinstall after it has installed the packages, so on Node 20 the
  // check's message came after ~2 minutes of installing. package.json's devEngines (npm 10.9 and newer) makes npm refuse
  // before it resolves a single package: here on the real old Node, in a copy of the project with its real dependency
  // list (nothing may be downloaded: the refusal must come first).
  it.skipIf(!hasOldNode)(
    `npm install on an old Node (${OLD_NODE} ${oldNodeVersion}) refuses before installing anything, naming the version`,
    () => {
      const dir = mkdtempSync(path.join(tmpdir(), "ocr-old-node-"));
      try {
        cpSync(path.join(ROOT, "package.json"), path.join(dir, "package.json"));
        cpSync(path.join(ROOT, ".npmrc"), path.join(dir, ".npmrc"));
        mkdirSync(path.join(dir, "scripts"));
        cpSync(path.join(ROOT, "scripts/check-node.cjs"), path.join(dir, "scripts/check-node.cjs"));
        const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${path.dirname(OLD_NODE)}:${process.env.PATH ?? ""}` };
        delete env.OCR_CHECK_NODE_VERSION;
        const result = spawnSync("npm", ["install", "--no-audit", "--no-fund"], {
          cwd: dir,
          env,
          encoding: "utf8",
          timeout: 90_000,
        });
        const output = `${result.stdout}\n${result.stderr}`;
        expect(result.error, "npm install was still running (installing) after 90 s").toBeUndefined();
        expect(result.status).not.toBe(0);
        expect(output).toContain("EBADDEVENGINES");
        expect(output).toContain('">=22.13" does not match "v' + oldNodeVersion + '"');
        expect(existsSync(path.join(dir, "node_modules"))).toBe(false);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it("passes Node 22.13 and newer", () => {
    for (const version of ["22.13.0", "24.21.0", "v25.0.0"]) {
      expect(run(process.execPath, ["scripts/check-node.cjs"], version).status, version).toBe(0);
    }
  });
});
