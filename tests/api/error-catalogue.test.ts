import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { errorCatalogue, errorCodes } from "@/lib/api/error-catalogue";

/*
 * docs/api.md is prose, so its error table is written by hand; this keeps it the catalogue's (lib/api/error-catalogue.ts),
 * which the OpenAPI document, the /docs page and the MCP hints render from. A failure prints the rows to paste.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");

/** The rows of the table under `| status | code | when |`, up to the first line that is not a row. */
function tableRows(markdown: string, header: string): string[] {
  const lines = markdown.split("\n");
  const start = lines.indexOf(header);
  expect(start, `no "${header}" in docs/api.md`).toBeGreaterThanOrEqual(0);
  const rows: string[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(line);
  }
  return rows;
}

describe("the error catalogue", () => {
  it("is the table of docs/api.md, row for row and in order", () => {
    const markdown = fs.readFileSync(path.join(ROOT, "docs/api.md"), "utf8");
    const expected = errorCodes.map(
      (code) => `| ${errorCatalogue[code].status} | \`${code}\` | ${errorCatalogue[code].when} |`,
    );
    expect(tableRows(markdown, "| status | code | when |")).toEqual(expected);
  });

  it("lists codes by status, with inline Markdown the /docs page can render (balanced backticks, no pipes)", () => {
    const statuses = errorCodes.map((code) => errorCatalogue[code].status);
    expect(statuses).toEqual([...statuses].sort((a, b) => a - b));
    for (const code of errorCodes) {
      const { when } = errorCatalogue[code];
      expect(when.split("`").length % 2, code).toBe(1);
      expect(when, code).not.toContain("|");
    }
  });
});
