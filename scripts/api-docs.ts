import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { buildOpenApiDocument } from "@/lib/api-docs/openapi";
import { referenceTables, renderGeneratedRegions } from "@/lib/api-docs/reference";
import { parseEnv } from "@/lib/env";

/*
 * `npm run docs:api`: writes the reference sections of docs/api.md (the regions between `<!-- generated: NAME … -->`
 * and `<!-- end generated -->`) from the OpenAPI document the zod schemas make (lib/api-docs/reference.ts says which).
 * The prose around them is left as it is. The document is built for the default configuration, whatever this
 * shell's variables, so the output is the same everywhere. tests/api/api-docs.test.ts fails when the file is stale.
 */

export const API_DOCS = path.resolve(import.meta.dirname, "../docs/api.md");

/** docs/api.md as the generator writes it, from its current text. Throws on a region with no table or a table with no region. */
export function regenerateApiDocs(markdown: string): string {
  const tables = referenceTables(buildOpenApiDocument(parseEnv({})));
  const { text, unknown, missing } = renderGeneratedRegions(markdown, tables);
  if (unknown.length > 0) throw new Error(`docs/api.md: generated regions with no table: ${unknown.join(", ")}`);
  if (missing.length > 0) {
    throw new Error(`docs/api.md: tables not in exactly one generated region: ${missing.join(", ")}`);
  }
  return text;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const before = readFileSync(API_DOCS, "utf8");
  const after = regenerateApiDocs(before);
  if (after === before) console.log("docs/api.md: up to date");
  else {
    writeFileSync(API_DOCS, after);
    console.log("docs/api.md: reference regions rewritten");
  }
}
