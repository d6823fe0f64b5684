import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..");

/** lib/'s import graph, type-only imports included (TypeScript's own resolver, with tsconfig's paths). */
function importGraph(): Map<string, string[]> {
  const config = ts.parseJsonConfigFileContent(
    ts.readConfigFile(path.join(ROOT, "tsconfig.json"), ts.sys.readFile).config,
    ts.sys,
    ROOT,
  );
  const lib = path.join(ROOT, "lib");
  const files = readdirSync(lib, { recursive: true, encoding: "utf8" })
    .filter((file) => /\.tsx?$/.test(file))
    .map((file) => path.join(lib, file));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const imported = ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles.flatMap(({ fileName }) => {
      const resolved = ts.resolveModuleName(fileName, file, config.options, ts.sys).resolvedModule;
      return resolved && !resolved.isExternalLibraryImport && resolved.resolvedFileName.startsWith(lib)
        ? [path.relative(ROOT, resolved.resolvedFileName)]
        : [];
    });
    graph.set(path.relative(ROOT, file), imported);
  }
  return graph;
}

/** The groups of files that import each other, directly or around a loop (Tarjan's strongly connected components). */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1) found.push(group.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

/**
 * The graph between lib/'s top-level parts: a folder (`lib/jobs/**` → `jobs`) or a top-level file (`lib/services.ts`).
 * An import inside one folder is no edge.
 */
function folderGraph(graph: Map<string, string[]>) {
  const part = (file: string) => file.split("/")[1]!;
  const folders = new Map<string, string[]>();
  for (const [file, targets] of graph) {
    const from = part(file);
    const to = targets.map(part);
    folders.set(from, [...new Set([...(folders.get(from) ?? []), ...to.filter((folder) => folder !== from)])]);
  }
  return folders;
}

describe("lib/'s modules", () => {
  it("do not import each other in a loop (type-only imports count: the loop is in the design either way)", () => {
    // Known and left: the Tesseract backends and their pool inside the engine process (lib/ocr/engine).
    const known = (group: string[]) => group.every((file) => /^lib\/ocr\/engine\/tesseract[-\w]*\.ts$/.test(file));
    expect(cycles(importGraph()).filter((group) => !known(group))).toEqual([]);
  });

  it("no two top-level folders of lib/ import each other, directly or around a loop (type-only imports count)", () => {
    // Before the API's contract was split (lib/api the errors and schemas, lib/api-docs the OpenAPI document), this
    // was one loop of 15: accounts, api, client-ip.ts, credits, http, input, intake, jobs, keys, oauth, ocr, process,
    // settings, store, webhooks. Before the engine pool and the queues were built with the other services
    // (lib/services.ts) and passed in, their builders read the installed overrides (lib/settings/installed.ts) from
    // lib/ocr, lib/jobs and lib/webhooks, which lib/settings imports: a loop of jobs, ocr, settings and webhooks.
    expect(cycles(folderGraph(importGraph()))).toEqual([]);
  });

  it("the folder check finds a loop: lib/api importing lib/http (which imports lib/api) is one", () => {
    const graph = importGraph();
    const folders = folderGraph(graph);
    // Not vacuous: the imports resolve (lib/http imports lib/api's errors) …
    expect(folders.get("http")).toContain("api");
    expect(graph.size).toBeGreaterThan(200);
    // … and one import the other way makes a loop.
    graph.set("lib/api/errors.ts", [...graph.get("lib/api/errors.ts")!, "lib/http/index.ts"]);
    expect(cycles(folderGraph(graph))).toContainEqual(expect.arrayContaining(["api", "http"]));
  });

  it("the folder check finds the loop of the installed overrides if it comes back (a builder reading lib/settings)", () => {
    const graph = importGraph();
    // lib/settings imports the engine's settings (lib/ocr/model) …
    expect(folderGraph(graph).get("settings")).toContain("ocr");
    // … so the engine pool's builder reading the process's settings there again is a loop.
    graph.set("lib/ocr/pool/process-wide.ts", [...graph.get("lib/ocr/pool/process-wide.ts")!, "lib/settings/index.ts"]);
    expect(cycles(folderGraph(graph))).toContainEqual(expect.arrayContaining(["ocr", "settings"]));
  });
});
