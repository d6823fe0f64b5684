import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { buildOpenApiDocument } from "@/lib/api-docs/openapi";
import { markdownTable, referenceTables, renderGeneratedRegions } from "@/lib/api-docs/reference";
import { parseEnv } from "@/lib/env";
import { API_DOCS, regenerateApiDocs } from "@/scripts/api-docs";
import { pushEnv } from "../support/env";

/*
 * docs/api.md's reference sections (endpoints, fields, query parameters, headers, error codes) are written by
 * `npm run docs:api` from the OpenAPI document the zod schemas make (docs/decisions.md#api-reference-generated). A
 * schema or description changed without regenerating fails here, naming the regions that differ and the command.
 */

const REGION = /<!-- generated: ([\w-]+)[^\n]*-->\n([^]*?)<!-- end generated -->/g;

const regions = (markdown: string) =>
  new Map([...markdown.matchAll(REGION)].map((match) => [match[1]!, match[2]!] as const));

describe("docs/api.md", () => {
  it("holds the reference the OpenAPI document makes now (else: npm run docs:api)", () => {
    const markdown = fs.readFileSync(API_DOCS, "utf8");
    const expected = regenerateApiDocs(markdown);
    const [now, generated] = [regions(markdown), regions(expected)];
    const stale = [...generated.keys()].filter((name) => now.get(name) !== generated.get(name));
    expect(stale, "docs/api.md's generated regions are stale: run `npm run docs:api` and commit docs/api.md").toEqual(
      [],
    );
    expect(markdown === expected, "docs/api.md differs from `npm run docs:api`'s output: run it").toBe(true);
  });

  it("has one region per table, each a table the document fills", () => {
    const names = [...regions(fs.readFileSync(API_DOCS, "utf8")).keys()];
    const tables = referenceTables(buildOpenApiDocument(parseEnv({})));
    expect(names.sort()).toEqual(Object.keys(tables).sort());
    for (const [name, table] of Object.entries(tables)) expect(table.rows.length, name).toBeGreaterThan(0);
  });
});

describe("the generator", () => {
  const tables = referenceTables(buildOpenApiDocument(parseEnv({})));
  const source = [
    "# Prose stays",
    "",
    "<!-- generated: errors (npm run docs:api) -->",
    "| old | table |",
    "<!-- end generated -->",
    "",
    "Words after | with a pipe.",
    "",
  ].join("\n");
  const names = Object.keys(tables).filter((name) => name !== "errors");
  const withAll = `${source}${names.map((name) => `<!-- generated: ${name} -->\n<!-- end generated -->\n`).join("")}`;

  it("replaces what is between the markers and nothing else, the same way every time", () => {
    const { text, unknown, missing } = renderGeneratedRegions(withAll, tables);
    expect([unknown, missing]).toEqual([[], []]);
    expect(
      text.startsWith("# Prose stays\n\n<!-- generated: errors (npm run docs:api) -->\n| status | code | when |\n"),
    ).toBe(true);
    expect(text).toContain(`${markdownTable(tables.errors!)}\n<!-- end generated -->\n\nWords after | with a pipe.\n`);
    expect(text).not.toContain("| old | table |");
    expect(renderGeneratedRegions(text, tables).text).toBe(text);
  });

  it("refuses a region it has no table for, and a table with no region", () => {
    expect(() => regenerateApiDocs(`${withAll}<!-- generated: nonsense -->\n<!-- end generated -->\n`)).toThrow(
      /no table: nonsense/,
    );
    expect(() => regenerateApiDocs(source)).toThrow(/not in exactly one generated region: endpoints/);
  });

  it("follows the schemas: a changed description changes the table", () => {
    const document = buildOpenApiDocument(parseEnv({}));
    const changed = structuredClone(document) as {
      components: { schemas: { OcrRequest: { properties: { imageUrl: { description: string } } } } };
    };
    changed.components.schemas.OcrRequest.properties.imageUrl.description = "A new word | with a pipe.";
    const table = markdownTable(referenceTables(changed)["request-fields"]!);
    expect(table).toContain(
      "| `imageUrl` | string (URI), at most 8192 characters, optional | A new word \\| with a pipe. |",
    );
    expect(table).not.toBe(markdownTable(referenceTables(document)["request-fields"]!));
  });

  it("does not depend on this shell's configuration (the document is built for the defaults)", () => {
    const markdown = fs.readFileSync(API_DOCS, "utf8");
    const restore = pushEnv({ MAX_PDF_PAGES: "7", VERCEL: "1", MAX_INLINE_BYTES: "1000" });
    try {
      expect(regenerateApiDocs(markdown)).toBe(markdown);
    } finally {
      restore();
    }
  });
});
