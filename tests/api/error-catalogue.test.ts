import { describe, expect, it } from "vitest";
import { errorCatalogue, errorCodes } from "@/lib/api/error-catalogue";

/*
 * The catalogue (lib/api/error-catalogue.ts) is what the OpenAPI document, the /docs page, docs/api.md's error table
 * (generated: tests/api/api-docs.test.ts keeps it current) and the MCP hints render from.
 */

describe("the error catalogue", () => {
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
