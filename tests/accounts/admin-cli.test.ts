import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import path from "node:path";
import * as esbuild from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getAccountByEmail } from "@/lib/accounts";
import { resolveApiKey } from "@/lib/keys";
import { getStore } from "@/lib/store";
import { signingSecrets } from "@/lib/webhooks";
import { TEST_REDIS_URL, withRedisStoreEnv } from "../support/redis";

const ROOT = path.resolve(import.meta.dirname, "../..");
// The CLI and this test share one Redis prefix, so what the CLI writes can be checked through lib/ directly.
const { prefix } = withRedisStoreEnv("admin-cli", { FREE_CREDITS: "100" });

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * scripts/admin.ts bundled once for this file (esbuild, the packages left to node_modules), run with plain Node under
 * the react-server condition: the same code as `npm run admin`, without tsx compiling lib/ again at every command
 * (about 2.7 CPU-seconds each, against 1). `npm run admin` itself (tsx) runs in the tests that say so (`viaTsx`).
 */
const BUNDLE = path.join(ROOT, `tests/.generated/admin-cli-${process.pid}.mjs`);
beforeAll(async () => {
  await esbuild.build({
    entryPoints: [path.join(ROOT, "scripts/admin.ts")],
    outfile: BUNDLE,
    bundle: true,
    platform: "node",
    format: "esm",
    packages: "external",
    alias: { "@": ROOT },
    conditions: ["react-server"],
    logLevel: "silent",
  });
});
afterAll(() => rmSync(BUNDLE, { force: true }));

function admin(...args: string[]): Promise<Result> {
  return run(false, args);
}

/** As `npm run admin` runs it: tsx, with lib/'s secret-handling modules ("server-only") loadable under react-server. */
function viaTsx(...args: string[]): Promise<Result> {
  return run(true, args);
}

function run(tsx: boolean, args: string[]): Promise<Result> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefix,
    FREE_CREDITS: "100",
  };
  for (const name of ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN", "KV_REST_API_URL", "KV_REST_API_TOKEN"]) {
    delete env[name];
  }
  return new Promise((resolve, reject) => {
    const child = spawn(
      tsx ? path.join(ROOT, "node_modules/.bin/tsx") : process.execPath,
      ["--conditions=react-server", tsx ? path.join(ROOT, "scripts/admin.ts") : BUNDLE, ...args],
      {
        cwd: ROOT,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("admin CLI (npm run admin)", () => {
  const email = `ops-${Date.now()}@example.com`;

  it("exits 2 with the usage for a missing or unknown command or option", async () => {
    const cases = [
      [],
      ["frobnicate"],
      ["balance", "--bogus"],
      ["create-user", "--email", email],
      ["grant", "--email", email, "--credits", "-3"],
    ];
    const results = await Promise.all(cases.map((args) => admin(...args)));
    results.forEach((result, index) => {
      expect(result.code, cases[index]?.join(" ")).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain("Usage: npm run admin -- <command>");
    });
    const help = await viaTsx("--help");
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("create-key  --email E [--name N]");
  });

  it("creates a user, a key (printing only the key), grants credits, shows the balance and revokes the key", async () => {
    const created = await admin("create-user", "--email", email.toUpperCase(), "--password", "operator password");
    expect(created).toMatchObject({ code: 0, stderr: "" });
    const userId = created.stdout.trim();
    expect(userId).toMatch(/^usr_/);

    const duplicate = await admin("create-user", "--email", email, "--password", "operator password");
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toContain("already exists");

    const key = await admin("create-key", "--email", email, "--name", "batch job");
    expect(key.code).toBe(0);
    expect(key.stdout).toMatch(/^ocr_[1-9A-HJ-NP-Za-km-z]{43,44}\n$/);
    const token = key.stdout.trim();
    expect(await resolveApiKey(getStore(), token)).toMatchObject({ userId, name: "batch job" });

    expect(await admin("balance", "--email", email)).toMatchObject({ code: 0, stdout: "100\n" });
    expect(await admin("grant", "--email", email, "--credits", "50")).toMatchObject({ code: 0, stdout: "150\n" });
    expect(await admin("balance", "--email", email)).toMatchObject({ code: 0, stdout: "150\n" });

    const revoked = await admin("revoke-key", "--email", email, "--start", token.slice(0, 12));
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(token.slice(0, 12));
    expect(await resolveApiKey(getStore(), token)).toBeNull();
    const again = await admin("revoke-key", "--email", email, "--start", token.slice(0, 12));
    expect(again.code).toBe(1);
  });

  it("webhook-secret prints a new secret once; an existing one is never printed, only replaced with --rotate (issue 29 point 10)", async () => {
    const owner = `hooks-${Date.now()}@example.com`;
    expect((await admin("create-user", "--email", owner, "--password", "operator password")).code).toBe(0);
    const account = await getAccountByEmail(getStore(), owner);

    const created = await admin("webhook-secret", "--email", owner);
    expect(created).toMatchObject({ code: 0, stderr: "" });
    expect(created.stdout).toMatch(/^whsec_[A-Za-z0-9+/]{43}=\n$/);
    const first = created.stdout.trim();
    expect(signingSecrets(await getStore().webhooks.getAccount(account!.id))).toEqual([first]);

    // It has one now: without --rotate the CLI says so and prints nothing on stdout.
    const refused = await admin("webhook-secret", "--email", owner);
    expect(refused).toMatchObject({ code: 1, stdout: "" });
    expect(refused.stderr).toContain(`already has a webhook secret (${first.slice(0, 12)}…`);
    expect(refused.stderr).not.toContain(first);

    const rotated = await admin("webhook-secret", "--email", owner, "--rotate");
    expect(rotated.code).toBe(0);
    const second = rotated.stdout.trim();
    expect(second).toMatch(/^whsec_/);
    expect(second).not.toBe(first);
    expect(rotated.stderr).toMatch(/the previous secret keeps signing until \d{4}-/);
    // The new one signs, and the old one beside it for its 24 h.
    expect(signingSecrets(await getStore().webhooks.getAccount(account!.id))).toEqual([second, first]);
    expect((await admin("webhook-secret", "--email", "nobody@example.com")).code).toBe(1);
  });

  it("exits 1 for an unknown account (npm run admin's own way: tsx, the store reached)", async () => {
    const result = await viaTsx("balance", "--email", "nobody@example.com");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("No account with e-mail nobody@example.com");
  });
});
