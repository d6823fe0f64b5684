import { describe, expect, it } from "vitest";
import { render } from "@/lib/ocr";
import type { ExtractedDocument, ExtractedPage } from "@/lib/ocr/model";
import type { LineStyle, OcrBlock } from "@/lib/ocr/model/document";
import { renderMarkdown } from "@/lib/ocr/render/markdown";

/** A line of a hand-built block: its text and style (size defaults to body size 10). */
type LineSpec = string | { text: string; size?: number; monospace?: boolean };
type BlockSpec = LineSpec[];

function page(blocks: BlockSpec[], number = 1): ExtractedPage {
  const built: OcrBlock[] = [];
  const lineStyles: LineStyle[][] = [];
  blocks.forEach((spec, b) => {
    const lines = spec.map((line, l) => {
      const text = typeof line === "string" ? line : line.text;
      const y = (b * 10 + l) / 100;
      return {
        text,
        confidence: 90,
        bbox: [0.1, y, 0.9, y + 0.01] as [number, number, number, number],
        words: text
          .split(/\s+/)
          .filter(Boolean)
          .map((word) => ({
            text: word,
            confidence: 90,
            bbox: [0.1, y, 0.2, y + 0.01] as [number, number, number, number],
          })),
      };
    });
    built.push({ text: lines.map((l) => l.text).join("\n"), confidence: 90, bbox: [0.1, 0, 0.9, 1], lines });
    lineStyles.push(
      spec.map((line) =>
        typeof line === "string"
          ? { size: 10 }
          : { size: line.size ?? 10, ...(line.monospace ? { monospace: true } : {}) },
      ),
    );
  });
  return {
    number,
    width: 1000,
    height: 1400,
    source: "ocr",
    confidence: 90,
    text: built.map((b) => b.text).join("\n\n"),
    blocks: built,
    lineStyles,
  };
}

function doc(...pages: ExtractedPage[]): ExtractedDocument {
  return { pages, pageCount: pages.length };
}

/** Enough body text that the body size (the character-weighted median) is 10. */
const BODY: BlockSpec = [
  "The quarterly numbers are in and they look better than last year in most of the regions.",
  "Every team contributed to the result, and the details are given in the sections below.",
];

const md = (...blocks: BlockSpec[]) => renderMarkdown(doc(page(blocks)));

describe("renderMarkdown: headings from relative line size", () => {
  it.each([
    [20, "# "], // ≥ 1.8 × body
    [18, "# "],
    [16, "## "], // ≥ 1.45 ×
    [14.5, "## "],
    [13, "### "], // ≥ 1.25 ×
    [12.5, "### "],
  ])("a line of size %d over body text of size 10 → %j", (size, prefix) => {
    const out = md([{ text: "Annual Summary", size }], BODY);
    expect(out.split("\n")[0]).toBe(`${prefix}Annual Summary`);
  });

  it.each([[12], [10], [8]])("size %d is not a heading", (size) => {
    const out = md([{ text: "Annual Summary", size }], BODY);
    expect(out).not.toMatch(/^#/m);
    expect(out.startsWith("Annual Summary\n\n")).toBe(true);
  });

  it("a heading wrapped over two lines is one heading", () => {
    const out = md(
      [
        { text: "Results of the", size: 20 },
        { text: "Second Quarter", size: 20 },
      ],
      BODY,
    );
    expect(out.split("\n")[0]).toBe("# Results of the Second Quarter");
  });

  it("a big block of many lines is not a heading (a large-print paragraph)", () => {
    const big = Array.from({ length: 5 }, (_, i) => ({ text: `Large print line number ${i + 1}`, size: 20 }));
    const out = md(big, BODY, BODY);
    expect(out).not.toMatch(/^#/m);
  });

  it("levels follow the ratio within the page: title, section, subsection", () => {
    const out = md(
      [{ text: "Title", size: 24 }],
      [{ text: "Section", size: 16 }],
      BODY,
      [{ text: "Subsection", size: 13 }],
      BODY,
    );
    expect(out.match(/^#+ .*$/gm)).toEqual(["# Title", "## Section", "### Subsection"]);
  });
});

describe("renderMarkdown: a line that carries on a sentence is not a heading", () => {
  // A two-column article set in 14 pt beside a page of 9 pt small print (most of the page's characters): the body
  // size is the small print's, so the article's lines are 1.5 × body. The paragraph is cut by the column break: the
  // second column starts with the rest of its sentence, one short line in a block of its own.
  const smallPrint = Array.from({ length: 12 }, (_, i) => ({
    text: `Note ${i + 1}: figures are unaudited and given in thousands of dollars unless stated otherwise in the text.`,
    size: 9,
  }));
  const column1 = [
    "The council met on Tuesday to discuss the budget for the coming year, and the",
    "members agreed that the new library should open before the summer. The mayor",
    "said that the committee will",
  ].map((text) => ({ text, size: 14 }));
  const column2 = [{ text: "review the proposal again in the spring.", size: 14 }];
  const column2More = [
    "Residents can send their comments to the city clerk until the end of March,",
    "by post or at the town hall, where the plans are on show every weekday. The",
    "library itself will be built on the site of the old market, which closed in",
    "the autumn after more than a century of trading.",
  ].map((text) => ({ text, size: 14 }));

  it("the second column's first line (small letter, after a line with no full stop, same size) joins the paragraph", () => {
    const out = md([{ text: "City council", size: 24 }], column1, column2, column2More, smallPrint);
    expect(out.match(/^#+ .*$/gm)).toEqual(["# City council"]);
    expect(out).toContain(
      "said that the committee will review the proposal again in the spring.\n\nResidents can send",
    );
  });

  it("the same line after a sentence's end, in another size, or starting with a capital stays a heading", () => {
    const closed = [...column1.slice(0, 2), { text: "said that the committee will decide.", size: 14 }];
    expect(md(column1.slice(0, 2), closed, column2, smallPrint).match(/^#+ .*$/gm)).toEqual([
      "## review the proposal again in the spring.",
    ]);
    const smaller = column1.map((line) => ({ ...line, size: 10 }));
    expect(md(smaller, column2, smallPrint).match(/^#+ .*$/gm)).toEqual([
      "## review the proposal again in the spring.",
    ]);
    const capital = [{ text: "Review of the proposal", size: 14 }];
    expect(md(column1, capital, smallPrint).match(/^#+ .*$/gm)).toEqual(["## Review of the proposal"]);
  });

  it("a word hyphenated across the break is mended", () => {
    const cut = [...column1.slice(0, 2), { text: "said that the commit-", size: 14 }];
    const rest = [{ text: "tee will review it in the spring.", size: 14 }];
    expect(md(cut, rest, smallPrint)).toContain("said that the committee will review it in the spring.");
  });
});

describe("renderMarkdown: lists", () => {
  it.each([["•"], ["-"], ["❖"], ["➢"], ["«"], ["●"], ["▪"], ["*"], ["–"]])("%j bullets → `- ` items", (bullet) => {
    const out = md(BODY, [`${bullet} First point`, `${bullet} Second point`, `${bullet} Third point`]);
    expect(out).toContain("\n\n- First point\n- Second point\n- Third point");
  });

  it("a French quotation in «…» is not a bullet", () => {
    const out = md(["« Bonjour » dit-il en entrant dans la salle."]);
    expect(out).toBe("« Bonjour » dit-il en entrant dans la salle.");
  });

  it.each([
    [
      ["1. Alpha", "2. Beta", "3. Gamma"],
      ["1. Alpha", "2. Beta", "3. Gamma"],
    ],
    [
      ["1) Alpha", "2) Beta"],
      ["1. Alpha", "2. Beta"],
    ],
    [
      ["(1) Alpha", "(2) Beta"],
      ["1. Alpha", "2. Beta"],
    ],
  ])("numbered items %j → an ordered list", (lines, expected) => {
    expect(md(lines)).toBe(expected.join("\n"));
  });

  it("lettered and roman items become ordered items too", () => {
    const lettered = md(["a) Alpha", "b) Beta"]).split("\n");
    const roman = md(["i. Alpha", "ii. Beta", "iv. Delta"]).split("\n");
    for (const lines of [lettered, roman]) for (const line of lines) expect(line).toMatch(/^\d+\. \S/);
    expect(lettered.map((l) => l.replace(/^\d+\. /, ""))).toEqual(["Alpha", "Beta"]);
  });

  it("a capitalised initial is a name, not a list: `A. Smith`", () => {
    expect(md(["A. Smith wrote the report."])).toBe("A. Smith wrote the report.");
  });

  it("a telephone number's area code is not a list item: `(203) 569-4345`", () => {
    expect(md(["(203) 569-4345 ext. 12"])).toBe("(203) 569-4345 ext. 12");
  });

  it("continuation lines are joined to their item", () => {
    const out = md(["• The first item wraps", "onto a second line", "and a third", "• The second item"]);
    expect(out).toBe("- The first item wraps onto a second line and a third\n- The second item");
  });

  it("a paragraph before a list in the same block is kept apart by a blank line", () => {
    const out = md(["The options are:", "1. Stay", "2. Go"]);
    expect(out).toBe("The options are:\n\n1. Stay\n2. Go");
  });

  it("a line with a bullet character inside is not a list item", () => {
    expect(md(["Prices • taxes • fees"])).toBe("Prices • taxes • fees");
  });
});

describe("renderMarkdown: paragraphs", () => {
  it("wrapped lines join into one paragraph; blocks are separated by a blank line", () => {
    const out = md(["First line of a paragraph", "and its second line."], ["Another block."]);
    expect(out).toBe("First line of a paragraph and its second line.\n\nAnother block.");
  });

  it("a word hyphenated at a line end is mended: exam- + ple", () => {
    expect(md(["This is an exam-", "ple of hyphenation."])).toBe("This is an example of hyphenation.");
  });

  it("a hyphen before a capital or after a number is kept (not a broken word)", () => {
    expect(md(["Anglo-", "Saxon history."])).toMatch(/^Anglo- ?Saxon history\.$/);
    expect(md(["pages 10-", "12 cover it."])).toMatch(/^pages 10- ?12 cover it\.$/);
  });

  it("hyphenated words are mended in list items too", () => {
    expect(md(["• A long com-", "ment here"])).toBe("- A long comment here");
  });

  it("body text starting with # is escaped, so it does not turn into a heading", () => {
    expect(md(["# 1 priority for this year is hiring."])).toBe("\\# 1 priority for this year is hiring.");
    expect(md(["> not a quotation"])).toBe("\\> not a quotation");
  });

  it("a # inside a line is left alone", () => {
    expect(md(["Issue #42 is closed."])).toBe("Issue #42 is closed.");
  });

  it("blank lines and empty blocks produce nothing", () => {
    expect(md(["  ", ""], ["Only text."], [])).toBe("Only text.");
  });
});

describe("renderMarkdown: code and pages", () => {
  it("a monospace block → a fenced code block, lines kept", () => {
    const code = [
      { text: "const x = 1;", monospace: true },
      { text: "  return x + 1;", monospace: true },
    ];
    const out = md(BODY, code);
    expect(out).toContain("\n\n```\nconst x = 1;\n  return x + 1;\n```");
  });

  it("a block only partly monospace is not code", () => {
    const out = md([{ text: "const x = 1;", monospace: true }, "plain words"]);
    expect(out).not.toContain("```");
  });

  it("pages are separated by a horizontal rule", () => {
    const out = renderMarkdown(doc(page([["Page one."]], 1), page([["Page two."]], 2), page([["Page three."]], 3)));
    expect(out).toBe("Page one.\n\n---\n\nPage two.\n\n---\n\nPage three.");
  });

  it("headings are judged per page (each page's own body size)", () => {
    const first = page(
      [[{ text: "Big Title", size: 30 }], ["Body at fifteen.".repeat(5)].map((t) => ({ text: t, size: 15 }))],
      1,
    );
    const second = page([[{ text: "Small Title", size: 14 }], BODY], 2);
    const out = renderMarkdown(doc(first, second));
    expect(out).toMatch(/^# Big Title$/m);
    expect(out).toMatch(/^### Small Title$/m);
  });

  it('render(document, "markdown") is renderMarkdown', () => {
    const d = doc(page([[{ text: "Title", size: 20 }], BODY, ["• item"]]));
    expect(render(d, "markdown")).toBe(renderMarkdown(d));
    expect(render(d, "markdown")).toMatch(/^# Title\n\n.+\n\n- item$/s);
  });

  it('render(document, "text") joins the pages\' text with a form feed', () => {
    const d = doc(page([["a b"], ["c"]], 1), page([["d"]], 2));
    expect(render(d, "text")).toBe("a b\n\nc\fd");
  });
});

describe("renderMarkdown: lines the writer ended stay lines (hard breaks), wrapped lines join", () => {
  /** Page-relative width of a character and of a space in the laid-out blocks below. */
  const CHAR = 0.01;

  /** A block whose lines are laid out word by word from x = 0.1, CHAR per character, one CHAR between words. */
  function laidOut(lines: string[], top = 0.1): OcrBlock {
    const built = lines.map((text, l) => {
      const y = top + l * 0.02;
      let x = 0.1;
      const words = text
        .split(" ")
        .filter(Boolean)
        .map((word) => {
          const bbox: [number, number, number, number] = [x, y, x + word.length * CHAR, y + 0.015];
          x += (word.length + 1) * CHAR;
          return { text: word, confidence: 90, bbox };
        });
      const bbox: [number, number, number, number] = [0.1, y, words.at(-1)?.bbox[2] ?? 0.1, y + 0.015];
      return { text, confidence: 90, bbox, words };
    });
    const x1 = Math.max(...built.map((line) => line.bbox[2]));
    return { text: lines.join("\n"), confidence: 90, bbox: [0.1, top, x1, top + lines.length * 0.02], lines: built };
  }

  /** A word processor's greedy wrap of `text` into lines of at most `chars` characters. */
  function wrap(text: string, chars: number): string[] {
    const lines: string[] = [];
    for (const word of text.split(" ")) {
      const last = lines.at(-1);
      if (last !== undefined && last.length + 1 + word.length <= chars) lines[lines.length - 1] = `${last} ${word}`;
      else lines.push(word);
    }
    return lines;
  }

  function pageOf(...blocks: string[][]): ExtractedPage {
    const built = blocks.map((lines, b) => laidOut(lines, 0.1 + b * 0.2));
    return {
      number: 1,
      width: 1000,
      height: 1400,
      source: "ocr",
      confidence: 90,
      text: built.map((block) => block.text).join("\n\n"),
      blocks: built,
      lineStyles: blocks.map((lines) => lines.map(() => ({ size: 10 }))),
    };
  }

  const markdownOf = (...blocks: string[][]) => renderMarkdown(doc(pageOf(...blocks)));

  const PROSE =
    "Optical character recognition turns pictures of text into text that a program can search, copy and index. " +
    "Scanned letters, receipts and forms are read the same way, and every page costs one credit whatever its length. " +
    "The examples on this page use the sample documents that every deployment serves.";

  it("an invoice: item rows ending in amounts, a header of short lines and the total each keep their line, as `text` does", () => {
    const page = pageOf(
      ["ACME OFFICE SUPPLIES"],
      ["Invoice 2026-0417", "Date: 12 March 2026", "Bill to: Northwind Traders, 8 Harbour Road"],
      ["2 x Widget 4.00", "1 x Gadget 12.50", "3 x Sprocket 7.25", "Paper A4, 5 reams 24.50"],
      ["Total due 48.00 EUR"],
      ["Payment within 30 days. Thank you for your order."],
    );
    expect(renderMarkdown(doc(page))).toBe(
      [
        "ACME OFFICE SUPPLIES",
        "Invoice 2026-0417  \nDate: 12 March 2026  \nBill to: Northwind Traders, 8 Harbour Road",
        "2 x Widget 4.00  \n1 x Gadget 12.50  \n3 x Sprocket 7.25  \nPaper A4, 5 reams 24.50",
        "Total due 48.00 EUR",
        "Payment within 30 days. Thank you for your order.",
      ].join("\n\n"),
    );
    // The same lines as the plain text.
    expect(renderMarkdown(doc(page)).replaceAll("  \n", "\n")).toBe(render(doc(page), "text"));
  });

  it("rows with amounts keep their lines even when each fills the block (no room test can tell)", () => {
    expect(markdownOf(["Coffee 3.50", "Bagels 4.25", "Juice 2.80 €"])).toBe(
      "Coffee 3.50  \nBagels 4.25  \nJuice 2.80 €",
    );
  });

  it.each([24, 32, 40, 48, 56, 64, 80])(
    "a ragged-right paragraph wrapped at %d characters joins into one paragraph",
    (chars) => {
      const lines = wrap(PROSE, chars);
      expect(lines.length).toBeGreaterThan(2);
      expect(markdownOf(lines)).toBe(PROSE);
    },
  );

  it("a wrapped line that happens to end in an amount still joins (one amount is not a row of items)", () => {
    const text =
      "The invoice for the office supplies came to 24.50 after the discount was applied, and it was paid in full.";
    const lines = wrap(text, 50);
    expect(lines[0]).toMatch(/24\.50$/);
    expect(markdownOf(lines)).toBe(text);
  });

  it("a word hyphenated at a short line's end is mended, not broken", () => {
    expect(markdownOf(["This is an exam-", "ple of a hyphenated word that wrapped onto the next line."])).toBe(
      "This is an example of a hyphenated word that wrapped onto the next line.",
    );
  });

  it("two paragraphs in one block: the short last line of the first ends it with a break", () => {
    const first = wrap(
      "The first paragraph has a few lines of ordinary text that wrap at the column edge as usual.",
      40,
    );
    const out = markdownOf([...first, "Second paragraph."]);
    expect(out).toBe(`${first.join(" ")}  \nSecond paragraph.`);
  });

  it("a line after a hard break that would read as Markdown syntax is escaped", () => {
    expect(
      markdownOf(["A line long enough to set the width of this block", "Notes", "# 3 on the list", "---", "> quoted"]),
    ).toBe("A line long enough to set the width of this block Notes  \n\\# 3 on the list  \n\\---  \n\\> quoted");
  });
});
