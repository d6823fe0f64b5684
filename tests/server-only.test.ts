import { readFile } from "node:fs/promises";
import path from "node:path";
import * as esbuild from "esbuild";
import { describe, expect, it } from "vitest";
// @ts-expect-error -- a plain .mjs build script without type declarations
import { engineBuildOptions } from "../scripts/build-engine.mjs";

const ROOT = path.resolve(import.meta.dirname, "..");

/** The modules that handle keys, passwords, sessions and the store's credentials: never in a client bundle. */
const SECRET_MODULES = [
  "lib/keys/api-keys.ts",
  "lib/accounts/password.ts",
  "lib/accounts/accounts.ts",
  "lib/accounts/sessions.ts",
  "lib/accounts/current.ts",
  "lib/store/index.ts",
  "lib/store/connect.ts",
  "lib/store/node-redis-requester.ts",
];

/** Project files of a bundle's graph that import "server-only" (which throws outside Next's server layers). */
async function serverOnlyImporters(options: esbuild.BuildOptions): Promise<string[]> {
  const { metafile } = await esbuild.build({
    ...options,
    write: false,
    metafile: true,
    sourcemap: false,
    logLevel: "silent",
  });
  return Object.entries(metafile.inputs)
    .filter(([, input]) => input.imports.some((imported) => /(^|\/)server-only(\/|$)/.test(imported.path)))
    .map(([file]) => file);
}

describe('"server-only"', () => {
  it.each(SECRET_MODULES)("%s imports it first", async (file) => {
    const source = await readFile(path.join(ROOT, file), "utf8");
    expect(source.startsWith('import "server-only";')).toBe(true);
  });

  it("stays out of the engine and CLI bundles, which run in plain Node", async () => {
    expect(await serverOnlyImporters(engineBuildOptions("/dev/null"))).toEqual([]);
    const cli: esbuild.BuildOptions = {
      entryPoints: [path.join(ROOT, "cli/src/ocr.ts")],
      bundle: true,
      platform: "node",
      format: "esm",
    };
    expect(await serverOnlyImporters({ ...cli, alias: { "@": ROOT }, define: { OCR_CLI_VERSION: '"test"' } })).toEqual(
      [],
    );
  });
});

describe("the engine bundle", () => {
  it("carries the engine's own errors, not the API's (lib/api: errors, the error catalogue; lib/process)", async () => {
    const { metafile } = await esbuild.build({
      ...engineBuildOptions("/dev/null"),
      write: false,
      metafile: true,
      sourcemap: false,
      logLevel: "silent",
    });
    if (!metafile) throw new Error("esbuild gave no metafile");
    const files = Object.keys(metafile.inputs);
    expect(files.some((file) => file.endsWith("lib/ocr/model/ocr-error.ts"))).toBe(true);
    expect(files.filter((file) => /lib\/(api|process)\/[^/]+\.ts$/.test(file))).toEqual([]);
  });
});
