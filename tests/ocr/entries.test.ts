import path from "node:path";
import { ESLint } from "eslint";
import * as esbuild from "esbuild";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

/** The project files an entry's bundle holds (type-only imports are gone), and the node: modules it imports. */
async function graphOf(entry: string): Promise<{ files: string[]; builtins: string[] }> {
  const { metafile } = await esbuild.build({
    entryPoints: [path.join(ROOT, entry)],
    bundle: true,
    write: false,
    metafile: true,
    platform: "node",
    format: "esm",
    packages: "external",
    alias: { "@": ROOT },
    absWorkingDir: ROOT,
    logLevel: "silent",
  });
  const inputs = Object.values(metafile.inputs);
  const builtins = inputs.flatMap((input) =>
    input.imports.filter((i) => i.external && /^node:/.test(i.path)).map((i) => i.path),
  );
  return { files: Object.keys(metafile.inputs), builtins: [...new Set(builtins)].sort() };
}

describe("lib/ocr's two doors", () => {
  it("the model entry reaches no engine process, no pool, no renderer, no node: module", async () => {
    const { files, builtins } = await graphOf("lib/ocr/model/index.ts");
    expect(files.filter((file) => !file.startsWith("lib/ocr/model/"))).toEqual([]);
    expect(builtins).toEqual([]);
  });

  it("the API's contract (lib/api-docs/openapi.ts) describes pages without loading the engine pool", async () => {
    const { files, builtins } = await graphOf("lib/api-docs/openapi.ts");
    expect(
      files.filter((file) => /^lib\/ocr\/(pool|engine|render)\//.test(file) || file === "lib/ocr/index.ts"),
    ).toEqual([]);
    expect(builtins).not.toContain("node:child_process");
  });

  it("lint refuses the reading entry outside lib/intake, lib/jobs and lib/health, and deep imports everywhere", async () => {
    const eslint = new ESLint({ cwd: ROOT });
    const code = [
      'import { openDocument } from "@/lib/ocr";',
      'import { OcrError } from "@/lib/ocr/model";',
      'import { ocrDocumentSchema } from "@/lib/ocr/model/document";',
      'import { render } from "../ocr";',
      "export const used = [openDocument, OcrError, ocrDocumentSchema, render];",
      "",
    ].join("\n");
    const refused = async (filePath: string) => {
      const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, filePath) });
      return result!.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.line);
    };
    expect(await refused("lib/mcp/probe.ts")).toEqual([1, 3, 4]);
    expect(await refused("lib/api-docs/probe.ts")).toEqual([1, 3, 4]);
    expect(await refused("app/api/probe/route.ts")).toEqual([1, 3, 4]);
    expect(await refused("lib/intake/probe.ts")).toEqual([3]);
    expect(await refused("lib/jobs/probe.ts")).toEqual([3]);
  }, 60_000);
});

describe("the API's contract: lib/api the floor, lib/api-docs the roof", () => {
  it("lint keeps lib/api to itself and lib/vocabulary, and lib/api-docs out of lib/", async () => {
    const eslint = new ESLint({ cwd: ROOT });
    const code = [
      'import { errorCodes } from "@/lib/api/error-catalogue";',
      'import { inputSources } from "@/lib/vocabulary";',
      'import { ocrDocumentSchema } from "@/lib/ocr/model";',
      'import { getEnv } from "@/lib/env";',
      'import { buildOpenApiDocument } from "@/lib/api-docs/openapi";',
      'import { errorResponse } from "../http";',
      'import { errorBodySchema } from "./errors";',
      "export const used = [errorCodes, inputSources, ocrDocumentSchema, getEnv, buildOpenApiDocument, errorResponse, errorBodySchema];",
      "",
    ].join("\n");
    const refused = async (filePath: string) => {
      const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, filePath) });
      return result!.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.line);
    };
    // The floor: its own files and the vocabulary, nothing else of the project.
    expect(await refused("lib/api/probe.ts")).toEqual([3, 4, 5, 6]);
    // The roof: no module of lib/ imports it (a folder, a top-level file, the server's start, the engine) …
    expect(await refused("lib/http/probe.ts")).toEqual([5]);
    expect(await refused("lib/services-probe.ts")).toEqual([5]);
    expect(await refused("lib/startup.ts")).toEqual([5]);
    expect(await refused("lib/ocr/model/probe.ts")).toContain(5);
    // … while routes, pages and its own files do.
    expect(await refused("lib/api-docs/probe.ts")).toEqual([]);
    expect(await refused("app/api/probe/route.ts")).toEqual([]);
  }, 60_000);
});
