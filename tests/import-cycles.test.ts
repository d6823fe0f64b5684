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

describe("lib/'s modules", () => {
  it("do not import each other in a loop (type-only imports count: the loop is in the design either way)", () => {
    // Known and left: the Tesseract backends and their pool inside the engine process (lib/ocr/engine).
    const known = (group: string[]) => group.every((file) => /^lib\/ocr\/engine\/tesseract[-\w]*\.ts$/.test(file));
    expect(cycles(importGraph()).filter((group) => !known(group))).toEqual([]);
  });
});
