import path from "node:path";
import { createCanvas, GlobalFonts } from "@napi-rs/canvas";
import { afterAll, describe, expect, it } from "vitest";
import { extractDocument, render } from "@/lib/ocr";
import type { ExtractedPage } from "@/lib/ocr/model";
import type { BBox, LineStyle, OcrBlock, OcrLine, OcrWord } from "@/lib/ocr/model/document";
import { renderMarkdown } from "@/lib/ocr/render/markdown";
import { detectTables, renderTable } from "@/lib/ocr/render/tables";
import { createTestPool } from "../support/ocr";
import { getEnv } from "@/lib/env";

/**
 * Pages laid out by hand in pixels on a 1000 × 1400 page: 10 px per character, 5 px per space, 20 px lines.
 * A line is a list of cells, each starting at its own x; `split` puts every column in a block of its own, the
 * way automatic page segmentation often cuts a table apart.
 */
const PAGE_W = 1000;
const PAGE_H = 1400;
const CHAR = 10;
const SPACE = 5;
const LINE = 20;

interface Cell {
  x: number;
  text: string;
  /** Align the cell's right edge on `x` instead of its left edge (numbers). */
  right?: boolean;
  /** Justify the words over this width (running text set in narrow columns). */
  justify?: number;
}
interface LineSpec {
  y: number;
  cells: Cell[];
}

function words(cell: Cell, y: number): OcrWord[] {
  const parts = cell.text.split(" ").filter(Boolean);
  const letters = parts.reduce((sum, w) => sum + w.length * CHAR, 0);
  const space = cell.justify && parts.length > 1 ? (cell.justify - letters) / (parts.length - 1) : SPACE;
  let x = cell.right ? cell.x - letters - space * (parts.length - 1) : cell.x;
  return parts.map((text) => {
    const bbox: BBox = [x / PAGE_W, y / PAGE_H, (x + text.length * CHAR) / PAGE_W, (y + LINE) / PAGE_H];
    x += text.length * CHAR + space;
    return { text, confidence: 90, bbox };
  });
}

function line(ws: OcrWord[]): OcrLine {
  return {
    text: ws.map((w) => w.text).join(" "),
    confidence: 90,
    bbox: [
      Math.min(...ws.map((w) => w.bbox[0])),
      ws[0]!.bbox[1],
      Math.max(...ws.map((w) => w.bbox[2])),
      ws[0]!.bbox[3],
    ],
    words: ws,
  };
}

function block(lines: OcrLine[]): OcrBlock {
  return {
    text: lines.map((l) => l.text).join("\n"),
    confidence: 90,
    bbox: [
      Math.min(...lines.map((l) => l.bbox[0])),
      lines[0]!.bbox[1],
      Math.max(...lines.map((l) => l.bbox[2])),
      lines.at(-1)!.bbox[3],
    ],
    lines,
  };
}

/** Groups of lines, each group a block (or, with `split`, a block per column of the group). */
function page(
  groups: Array<{ lines: LineSpec[]; split?: boolean }>,
  source: ExtractedPage["source"] = "ocr",
): ExtractedPage {
  const blocks: OcrBlock[] = [];
  for (const group of groups) {
    if (group.split) {
      const columns = Math.max(...group.lines.map((l) => l.cells.length));
      for (let k = 0; k < columns; k++) {
        const lines = group.lines.filter((l) => l.cells[k]).map((l) => line(words(l.cells[k]!, l.y)));
        if (lines.length > 0) blocks.push(block(lines));
      }
    } else {
      blocks.push(block(group.lines.map((l) => line(l.cells.flatMap((c) => words(c, l.y))))));
    }
  }
  const lineStyles: LineStyle[][] = blocks.map((b) => b.lines.map(() => ({ size: LINE })));
  return {
    number: 1,
    width: PAGE_W,
    height: PAGE_H,
    source,
    confidence: 90,
    text: blocks.map((b) => b.text).join("\n\n"),
    blocks,
    lineStyles,
  };
}

const markdown = (p: ExtractedPage) => renderMarkdown({ pages: [p], pageCount: 1 });

/** Text wrapped at `width` characters, as lines starting at `x`, `pitch` px apart from `y` (justified: all but the last). */
function prose(text: string, x: number, y: number, width: number, pitch = 28, justify = false): LineSpec[] {
  const lines: string[] = [];
  let current = "";
  for (const word of text.split(" ")) {
    if (current && current.length + 1 + word.length > width) {
      lines.push(current);
      current = word;
    } else current = current ? `${current} ${word}` : word;
  }
  if (current) lines.push(current);
  return lines.map((t, i) => ({
    y: y + i * pitch,
    cells: [{ x, text: t, ...(justify && i < lines.length - 1 ? { justify: width * CHAR } : {}) }],
  }));
}

const INTRO = "The quarterly figures are shown in the table below, with the prior year for comparison.";
const OUTRO = "All amounts are in thousands of dollars and have not been audited by the firm.";
const LOREM =
  "Asset and wealth management generates revenues from the following sources and we receive fees related to " +
  "managing assets for institutional and individual clients, providing investing and wealth advisory solutions, " +
  "providing financial planning and counseling services, and executing brokerage transactions for wealth " +
  "management clients. The vast majority of revenues in management and other fees consists of asset based " +
  "fees on client assets that we manage for them over the years ahead.";

/** A 4 × 3 table (header + three rows): labels left-aligned at 100, amounts right-aligned at 600 and 800. */
const FIGURES: LineSpec[] = [
  {
    y: 300,
    cells: [
      { x: 100, text: "Region" },
      { x: 600, text: "2023", right: true },
      { x: 800, text: "2022", right: true },
    ],
  },
  {
    y: 328,
    cells: [
      { x: 100, text: "North America" },
      { x: 600, text: "48,677", right: true },
      { x: 800, text: "54,065", right: true },
    ],
  },
  {
    y: 356,
    cells: [
      { x: 100, text: "Europe" },
      { x: 600, text: "14,020", right: true },
      { x: 800, text: "23,723", right: true },
    ],
  },
  {
    y: 384,
    cells: [
      { x: 100, text: "Asia Pacific" },
      { x: 600, text: "(1,134)", right: true },
      { x: 800, text: "9,860", right: true },
    ],
  },
];
const FIGURES_MD = [
  "| Region | 2023 | 2022 |",
  "| --- | --- | --- |",
  "| North America | 48,677 | 54,065 |",
  "| Europe | 14,020 | 23,723 |",
  "| Asia Pacific | (1,134) | 9,860 |",
].join("\n");

describe("tables from word geometry", () => {
  it("a 4 × 3 aligned table with numeric cells, its columns cut into separate blocks, becomes a Markdown table in place", () => {
    const p = page([
      { lines: prose(INTRO, 100, 220, 80) },
      { lines: FIGURES, split: true },
      { lines: prose(OUTRO, 100, 460, 80) },
    ]);
    const [table, ...others] = detectTables(p);
    expect(others).toEqual([]);
    expect(table!.rows).toEqual([
      ["Region", "2023", "2022"],
      ["North America", "48,677", "54,065"],
      ["Europe", "14,020", "23,723"],
      ["Asia Pacific", "(1,134)", "9,860"],
    ]);
    expect(markdown(p)).toBe(`${INTRO}\n\n${FIGURES_MD}\n\n${OUTRO}`);
  });

  it("the same table as one line per row (a PDF text layer) gives the same Markdown", () => {
    const p = page(
      [{ lines: prose(INTRO, 100, 220, 80) }, { lines: FIGURES }, { lines: prose(OUTRO, 100, 460, 80) }],
      "text-layer",
    );
    expect(markdown(p)).toBe(`${INTRO}\n\n${FIGURES_MD}\n\n${OUTRO}`);
  });

  it("lines of the table's blocks that stand above it (a column group label) come before it, the rest after", () => {
    const label = { y: 272, cells: [{ x: 640, text: "As of December" }] };
    // Labels in one block; the group label and the amounts in another, as automatic segmentation cuts it.
    const labels = FIGURES.map((l) => ({ ...l, cells: l.cells.slice(0, 1) }));
    const amounts = FIGURES.map((l) => ({ ...l, cells: l.cells.slice(1) }));
    const figures = page([{ lines: labels }, { lines: [label, ...amounts] }]);
    expect(markdown(figures)).toBe(`As of December\n\n${FIGURES_MD}`);
  });

  it("text and json output are unchanged: only the markdown renders tables", () => {
    const p = page([{ lines: FIGURES, split: true }]);
    const document = { pages: [p], pageCount: 1 };
    expect(render(document, "text")).toBe(p.text);
    expect(render(document, "text")).not.toContain("|");
    expect(JSON.parse(render(document, "json")).pages[0].blocks).toHaveLength(3);
  });

  it("a `|` inside a cell is escaped", () => {
    expect(
      renderTable([
        ["a|b", "c"],
        ["1", "2"],
      ]),
    ).toBe("| a\\|b | c |\n| --- | --- |\n| 1 | 2 |");
  });

  it("rows with an empty first cell on top of a table are one header, its cells set on several lines", () => {
    const p = page([
      {
        lines: [
          {
            y: 300,
            cells: [
              { x: 300, text: "First group" },
              { x: 550, text: "Second" },
            ],
          },
          {
            y: 328,
            cells: [
              { x: 300, text: "ex: speak" },
              { x: 550, text: "group" },
            ],
          },
          {
            y: 356,
            cells: [
              { x: 100, text: "I" },
              { x: 300, text: "speak" },
              { x: 550, text: "finish" },
            ],
          },
          {
            y: 384,
            cells: [
              { x: 100, text: "You" },
              { x: 300, text: "speak" },
              { x: 550, text: "finish" },
            ],
          },
          {
            y: 412,
            cells: [
              { x: 100, text: "They" },
              { x: 300, text: "speak" },
              { x: 550, text: "finish" },
            ],
          },
        ],
        split: true,
      },
    ]);
    expect(detectTables(p)[0]!.rows).toEqual([
      ["", "First group ex: speak", "Second group"],
      ["I", "speak", "finish"],
      ["You", "speak", "finish"],
      ["They", "speak", "finish"],
    ]);
  });

  it("a description column of running text beside short cells is a table; its wrapped lines join their row", () => {
    const p = page(
      [
        {
          lines: [
            {
              y: 300,
              cells: [
                { x: 100, text: "Column" },
                { x: 300, text: "Type" },
                { x: 500, text: "Description" },
              ],
            },
            {
              y: 328,
              cells: [
                { x: 100, text: "USER_NAME" },
                { x: 300, text: "VARCHAR(10)" },
                { x: 500, text: "Name of the user profile that has" },
              ],
            },
            { y: 356, cells: [{ x: 500, text: "a usage setting for this function." }] },
            {
              y: 384,
              cells: [
                { x: 100, text: "USAGE" },
                { x: 300, text: "VARCHAR(7)" },
                { x: 500, text: "Whether the user may use it." },
              ],
            },
            {
              y: 412,
              cells: [
                { x: 100, text: "USER_TYPE" },
                { x: 300, text: "VARCHAR(5)" },
                { x: 500, text: "Type of user profile: a group." },
              ],
            },
          ],
        },
      ],
      "text-layer",
    );
    expect(detectTables(p)[0]!.rows).toEqual([
      ["Column", "Type", "Description"],
      ["USER_NAME", "VARCHAR(10)", "Name of the user profile that has a usage setting for this function."],
      ["USAGE", "VARCHAR(7)", "Whether the user may use it."],
      ["USER_TYPE", "VARCHAR(5)", "Type of user profile: a group."],
    ]);
  });

  it("a currency sign standing apart belongs to its amount, and wider amounts do not break the column", () => {
    const p = page([
      {
        lines: [
          {
            y: 300,
            cells: [
              { x: 100, text: "$ in millions" },
              { x: 600, text: "2023", right: true },
              { x: 800, text: "2022", right: true },
            ],
          },
          {
            y: 328,
            cells: [
              { x: 100, text: "Corporate" },
              { x: 480, text: "$" },
              { x: 600, text: "11,715", right: true },
              { x: 680, text: "$" },
              { x: 800, text: "14,359", right: true },
            ],
          },
          {
            y: 356,
            cells: [
              { x: 100, text: "Real estate" },
              { x: 600, text: "16,603", right: true },
              { x: 800, text: "18,699", right: true },
            ],
          },
          {
            y: 384,
            cells: [
              { x: 100, text: "Total" },
              { x: 480, text: "$" },
              { x: 600, text: "$191,863", right: true },
              { x: 800, text: "214,970", right: true },
            ],
          },
        ],
        split: true,
      },
    ]);
    expect(detectTables(p)[0]!.rows).toEqual([
      ["$ in millions", "2023", "2022"],
      ["Corporate", "$ 11,715", "$ 14,359"],
      ["Real estate", "16,603", "18,699"],
      ["Total", "$ $191,863", "214,970"],
    ]);
  });
});

describe("what is not a table", () => {
  it("two columns of running text (a book page), lines side by side at the same height, stay paragraphs", () => {
    const left = prose(LOREM, 60, 200, 40);
    const right = prose(LOREM.split(" ").reverse().join(" "), 540, 200, 40);
    const rows = left.map((l, i) => ({ y: l.y, cells: [...l.cells, ...(right[i]?.cells ?? [])] }));
    for (const p of [page([{ lines: left }, { lines: right }]), page([{ lines: rows }], "text-layer")]) {
      expect(detectTables(p)).toEqual([]);
      expect(markdown(p)).not.toContain("|");
    }
  });

  it("three narrow justified columns (a newspaper page), wide word spaces and all, stay paragraphs", () => {
    const columns = [0, 1, 2].map((c) =>
      prose(c === 1 ? LOREM.split(" ").reverse().join(" ") : LOREM, 40 + c * 320, 200, 26, 28, true),
    );
    const rows = columns[0]!.map((l, i) => ({ y: l.y, cells: columns.flatMap((col) => col[i]?.cells ?? []) }));
    for (const p of [page(columns.map((lines) => ({ lines }))), page([{ lines: rows }], "text-layer")]) {
      expect(detectTables(p)).toEqual([]);
      expect(markdown(p)).not.toContain("|");
    }
  });

  it("a table beside a column of running text: the table alone is taken, the text stays a paragraph", () => {
    const text = prose(LOREM, 60, 200, 40, 31);
    const figures = FIGURES.map((l) => ({ y: l.y - 80, cells: l.cells.map((c) => ({ ...c, x: c.x / 2 + 500 })) }));
    const p = page([{ lines: text }, { lines: figures, split: true }]);
    const tables = detectTables(p);
    expect(tables.map((t) => t.rows)).toEqual([
      [
        ["Region", "2023", "2022"],
        ["North America", "48,677", "54,065"],
        ["Europe", "14,020", "23,723"],
        ["Asia Pacific", "(1,134)", "9,860"],
      ],
    ]);
    expect(markdown(p).split("\n\n")[0]).toBe(LOREM);
  });

  it("a table of contents with dot leaders stays lines", () => {
    const entries = ["Notices", "Trademarks", "Preface", "Authors", "Chapter one"].map((title, i) => ({
      y: 300 + i * 28,
      cells: [
        { x: 100, text: `${title} ${". ".repeat(30 - title.length).trim()}` },
        { x: 800, text: String(i + 3), right: true },
      ],
    }));
    expect(detectTables(page([{ lines: entries }], "text-layer"))).toEqual([]);
  });

  it("two columns of short words with no numbers (a list set in two columns) are not a table", () => {
    const names = ["Alice Martin", "Bruno Keller", "Chen Wei", "Dana Scott", "Emil Novak", "Farah Aziz"];
    const lines = [0, 1, 2].map((i) => ({
      y: 300 + i * 28,
      cells: [
        { x: 100, text: names[i]! },
        { x: 500, text: names[i + 3]! },
      ],
    }));
    expect(detectTables(page([{ lines }]))).toEqual([]);
  });

  it("a phone photo's background (marks read at low confidence that line up in columns) is not a table; the page's text stays", () => {
    // The paper's text in the middle; around it the desk: short marks, some of them digits, read at 15–45 %,
    // lining up in four columns over five rows above the paper and five below it.
    const noise = [
      ["ee", "~", "11", "4"],
      ["=", "ll", "1", "—"],
      ["ae", "|", "4", "ss"],
      ["~~", "i", "11", "7"],
      ["Ss", ":", "1", "oo"],
    ];
    const background = (y0: number, seed: number): LineSpec[] =>
      noise.map((cells, r) => ({
        y: y0 + r * 28,
        cells: cells.map((text, k) => ({ x: 30 + k * 300, text })).filter((_, k) => (r + k + seed) % 5 !== 0),
      }));
    const p = page([
      { lines: background(40, 0), split: true },
      { lines: prose(LOREM, 200, 300, 60) },
      { lines: background(900, 2), split: true },
    ]);
    p.blocks.forEach((b, i) => {
      if (b.text.startsWith("Asset and wealth")) return;
      b.lines.forEach((l, r) => l.words.forEach((w, k) => (w.confidence = 15 + ((i * 3 + r * 7 + k * 13) % 31))));
    });
    expect(detectTables(p)).toEqual([]);
    const out = markdown(p);
    expect(out).not.toContain("| --- |");
    expect(out).toContain(LOREM.slice(0, 60));
  });

  it("a real table with a few cells read poorly is still a table", () => {
    const p = page([{ lines: FIGURES, split: true }]);
    // Two of its twelve cells read at 35–45 % (a smudge): most cells are real text.
    p.blocks[1]!.lines[1]!.words[0]!.confidence = 35;
    p.blocks[2]!.lines[3]!.words[0]!.confidence = 45;
    expect(detectTables(p).map((t) => t.rows[1])).toEqual([["North America", "48,677", "54,065"]]);
  });

  it("two rows are not enough", () => {
    expect(detectTables(page([{ lines: FIGURES.slice(0, 2), split: true }]))).toEqual([]);
  });
});

describe("receipts", () => {
  // Decision: an item list with aligned quantities and prices is a table (three or more rows sharing the columns,
  // a column of numbers); totals below it in the same columns are rows of it. A key/value list with amounts in
  // two columns is one too (the numbers column is what makes two columns a table).
  it("an item / price list is a table, with its totals", () => {
    const items = [
      ["1", "Cappuccino large", "4.50"],
      ["2", "Croissant", "5.80"],
      ["1", "Orange juice", "3.20"],
    ];
    const lines: LineSpec[] = items.map(([qty, item, price], i) => ({
      y: 300 + i * 28,
      cells: [
        { x: 80, text: qty! },
        { x: 140, text: item! },
        { x: 520, text: price!, right: true },
      ],
    }));
    lines.push({
      y: 400,
      cells: [
        { x: 140, text: "TOTAL" },
        { x: 520, text: "13.50", right: true },
      ],
    });
    const p = page([{ lines: prose("CAFE CENTRAL 12 Main Street", 140, 220, 40) }, { lines }]);
    expect(detectTables(p)[0]!.rows).toEqual([
      ["1", "Cappuccino large", "4.50"],
      ["2", "Croissant", "5.80"],
      ["1", "Orange juice", "3.20"],
      ["", "TOTAL", "13.50"],
    ]);
    expect(markdown(p)).toBe(
      "CAFE CENTRAL 12 Main Street\n\n| 1 | Cappuccino large | 4.50 |\n| --- | --- | --- |\n| 2 | Croissant | 5.80 |\n| 1 | Orange juice | 3.20 |\n|  | TOTAL | 13.50 |",
    );
  });
});

describe("a ruled table read by the engine", () => {
  const pool = createTestPool();
  afterAll(() => pool.terminate());

  it("a ruled table drawn as an image comes back as a Markdown table with the same cells", async () => {
    GlobalFonts.registerFromPath(path.resolve("tests/fixtures/fonts/LiberationSans-Regular.ttf"), "Table Sans");
    const cells = [
      ["Product", "Units", "Price"],
      ["Apples", "120", "3.40"],
      ["Pears", "75", "2.95"],
      ["Plums", "240", "1.80"],
      ["Cherries", "36", "7.25"],
    ];
    const widths = [360, 220, 220];
    const rowHeight = 64;
    const [x0, y0] = [60, 140];
    const canvas = createCanvas(1000, 600);
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, 1000, 600);
    ctx.fillStyle = "#000000";
    ctx.font = '30px "Table Sans"';
    ctx.fillText("Fruit sold in March", x0, 90);
    ctx.font = '28px "Table Sans"';
    ctx.strokeStyle = "#000000";
    ctx.lineWidth = 2;
    const tableWidth = widths.reduce((a, b) => a + b, 0);
    for (let r = 0; r <= cells.length; r++) {
      ctx.beginPath();
      ctx.moveTo(x0, y0 + r * rowHeight);
      ctx.lineTo(x0 + tableWidth, y0 + r * rowHeight);
      ctx.stroke();
    }
    let x = x0;
    for (let c = 0; c <= widths.length; c++) {
      ctx.beginPath();
      ctx.moveTo(x, y0);
      ctx.lineTo(x, y0 + cells.length * rowHeight);
      ctx.stroke();
      x += widths[c] ?? 0;
    }
    cells.forEach((row, r) => {
      let cx = x0;
      row.forEach((text, c) => {
        ctx.fillText(text, cx + 20, y0 + r * rowHeight + 42);
        cx += widths[c]!;
      });
    });
    const doc = await extractDocument(canvas.toBuffer("image/png"), { env: getEnv(), pool });
    const out = render(doc, "markdown");
    expect(out).toBe(`Fruit sold in March\n\n${renderTable(cells)}`);
  });
});
