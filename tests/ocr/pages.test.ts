import { describe, expect, it } from "vitest";
import { parsePageSelection } from "@/lib/ocr/model/pages";
import { expectOcrError } from "../support/ocr";

describe("parsePageSelection: accepted selections", () => {
  const cases: Array<[spec: string | undefined, pageCount: number, expected: number[]]> = [
    [undefined, 3, [1, 2, 3]],
    ["", 3, [1, 2, 3]],
    ["   ", 2, [1, 2]],
    ["1", 1, [1]],
    ["1-3,5", 10, [1, 2, 3, 5]],
    ["7-", 10, [7, 8, 9, 10]],
    ["10-", 10, [10]],
    ["1-", 1, [1]],
    [" 1 - 3 , 5 ", 10, [1, 2, 3, 5]],
    ["2,2,2", 5, [2]],
    ["1-3,2-4", 5, [1, 2, 3, 4]],
    ["5,1,3", 5, [1, 3, 5]],
    ["4-4", 5, [4]],
    ["01-02", 5, [1, 2]],
    ["3,1-2", 3, [1, 2, 3]],
  ];

  it.each(cases)("%j of %i pages → %j", (spec, pageCount, expected) => {
    expect(parsePageSelection(spec, pageCount)).toEqual(expected);
  });

  it("a selection within the limit of a longer document is fine", () => {
    expect(parsePageSelection("1-50", 10_000, 50)).toHaveLength(50);
    expect(parsePageSelection("9990-", 10_000, 50)).toEqual([
      9990, 9991, 9992, 9993, 9994, 9995, 9996, 9997, 9998, 9999, 10_000,
    ]);
  });
});

describe("parsePageSelection: refused selections", () => {
  it.each([
    ["6", 5],
    ["1-3,9", 5],
    ["4-", 3], // starts past the end
    ["2-9", 5],
    ["99999999999999999999", 5],
  ] as const)("%j of %i pages: a page that does not exist → bad_page_list", async (spec, pageCount) => {
    const error = await expectOcrError(() => parsePageSelection(spec, pageCount), "bad_page_list");
    expect(error.message).toMatch(/does not exist|not a valid range/);
  });

  it("names the document's page count", async () => {
    const error = await expectOcrError(() => parsePageSelection("4", 3), "bad_page_list");
    expect(error.message).toContain("3 pages");
  });

  it.each([["3-1"], ["0"], ["0-2"], ["5-4"]])("%j: reversed or zero → bad_page_list", async (spec) => {
    await expectOcrError(() => parsePageSelection(spec, 10), "bad_page_list");
  });

  it.each([["abc"], ["1;2"], ["-3"], ["1--3"], [",1"], ["1,"], ["1-3-5"], ["1.5"], ["1e2"], ["one"], ["1 2"], ["all"]])(
    "%j: not a page list → bad_page_list",
    async (spec) => {
      await expectOcrError(() => parsePageSelection(spec, 10), "bad_page_list");
    },
  );

  it.each([
    [undefined, 60, 50],
    ["", 51, 50],
    ["1-51", 100, 50],
    ["1-3,10-", 100, 50],
    ["2-", 1_000_000, 50],
  ] as const)("%j of %i pages with a limit of %i → too_many_pages", async (spec, pageCount, maxPages) => {
    await expectOcrError(() => parsePageSelection(spec, pageCount, maxPages), "too_many_pages");
  });

  it("the limit counts distinct pages, not how they are written", () => {
    expect(parsePageSelection("1-2,1-2,2", 10, 2)).toEqual([1, 2]);
  });
});
