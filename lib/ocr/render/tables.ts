/**
 * Tables in a page's words (`detectTables`) and their Markdown (`renderTable`). This module finds the runs of rows
 * that share gutters and searches a page's side-by-side columns one by one; the word and row geometry is
 * table-rows.ts, and making a run into cells and judging whether they are a table is table-fit.ts.
 */
import type { BBox, ExtractedPage } from "../model/document";
import { columnCells, fitTable, isLong, MIN_ROWS, SHORT_CELL_WORDS, type Table } from "./table-fit";
import {
  charWidth,
  columnIndex,
  columnsOf,
  coverage,
  CURRENCY,
  extent,
  groupRows,
  guttersOf,
  hasGutter,
  isContent,
  kindOf,
  median,
  mergeIntervals,
  overlapsExtent,
  restrict,
  rowWords,
  type Fragment,
  type Row,
  type Word,
  type WordRef,
} from "./table-rows";

export type { WordRef } from "./table-rows";

export interface DetectedTable {
  /** Cell texts row by row, the first row being the header; every row has the same number of cells. */
  rows: string[][];
  /** Normalized box around the table's rows. */
  bbox: BBox;
  /** Every word the table took: those in its cells and the rule marks dropped from between its columns. */
  words: WordRef[];
}

/**
 * A gutter (a column boundary) is an x-range no word of the rows crosses, at least this many character widths
 * (median width of a character on the page) wide. Word spaces are ~0.5 of a width (up to ~2.5 in narrow justified
 * columns, which is why a gutter must also hold over several rows). On the benchmark tables (docs/decisions.md#table-gutters) the narrowest gap between
 * two columns was 2.2 widths (right-aligned amounts, 2023 | 2022), and the widest gap inside one cell 1.4 (a phone
 * number's "(203) 569-4345").
 */
const GUTTER_WIDTHS = 1.8;

/** A vertical gap of more than this many row heights ends a table (groups within one table were 2.4 apart). */
const MAX_ROW_GAP = 3;

/** Zones inside zones: page → text column → table. */
const MAX_DEPTH = 3;

/**
 * Tables found from word geometry alone, so scans and PDF text layers are treated alike: the page's lines (from
 * every block, since automatic segmentation often cuts a table's columns into separate blocks) are grouped into
 * visual rows; a run of at least three rows that share vertical gutters is a candidate, its gutters being the
 * column boundaries. It is a table only when most of its cells are short (or numeric): two columns of running
 * text side by side are a two-column page, which is then searched column by column for tables inside it.
 */
export function detectTables(page: ExtractedPage): DetectedTable[] {
  const width = page.width > 0 ? page.width : 1;
  const height = page.height > 0 ? page.height : 1;
  const fragments: Fragment[] = [];
  page.blocks.forEach((block, b) =>
    block.lines.forEach((line, l) => {
      // Code keeps its own layout (a fenced block).
      if (page.lineStyles[b]?.[l]?.monospace) return;
      const words: Word[] = [];
      line.words.forEach((word, w) => {
        const text = word.text.trim();
        if (!text) return;
        let x0 = word.bbox[0] * width;
        const x1 = word.bbox[2] * width;
        // `$31,762` in a column of amounts whose `$` signs stand apart: the amount decides the column.
        if (text.length > 1 && CURRENCY.test(text[0]!)) x0 += (x1 - x0) / text.length;
        words.push({
          text,
          confidence: word.confidence,
          x0,
          x1,
          height: (line.bbox[3] - line.bbox[1]) * height,
          kind: kindOf(text),
          ref: { block: b, line: l, word: w },
        });
      });
      if (words.length > 0) fragments.push({ words, y0: line.bbox[1] * height, y1: line.bbox[3] * height });
    }),
  );
  return findTables(fragments, 0)
    .sort((a, b) => a.y0 - b.y0)
    .map((table) => ({
      rows: table.cells.map((row) => row.map((cell) => cell.map((w) => w.text).join(" "))),
      bbox: [table.x0 / width, table.y0 / height, table.x1 / width, table.y1 / height],
      words: table.taken.map((w) => w.ref),
    }));
}

/** A GitHub-flavoured Markdown table; the first row is the header. */
export function renderTable(rows: string[][]): string {
  const cell = (text: string) => text.replace(/\\/g, "\\\\").replace(/\|/g, "\\|").replace(/\s+/g, " ").trim();
  const line = (row: string[]) => `| ${row.map(cell).join(" | ")} |`;
  const [header = [], ...body] = rows;
  return [line(header), `|${header.map(() => " --- ").join("|")}|`, ...body.map(line)].join("\n");
}

function findTables(fragments: Fragment[], depth: number): Table[] {
  const rows = groupRows(fragments);
  const cw = charWidth(fragments);
  if (rows.length < MIN_ROWS || cw <= 0) return [];
  const minGutter = GUTTER_WIDTHS * cw;
  const tables: Table[] = [];
  let i = 0;
  // Rows before `floor` belong to a table or a zone already searched.
  let floor = 0;
  while (i + MIN_ROWS <= rows.length) {
    const seed = findSeed(rows, i, minGutter);
    if (!seed) break;
    const [a, b] = grow(rows, seed, minGutter, floor);
    const run = rows.slice(a, b + 1);
    const table = fitTable(run, minGutter, cw);
    if (table && !flowsPast(table, rows) && !embedded(table, rows, minGutter)) {
      tables.push(table);
      i = floor = b + 1;
      continue;
    }
    // Not a table: side-by-side columns (a two-column page, a sidebar beside the text) are searched one by one.
    const cuts = zoneCuts(run, minGutter);
    if (cuts.length > 0 && depth < MAX_DEPTH) {
      const edges = [-Infinity, ...cuts, Infinity];
      for (let z = 0; z + 1 < edges.length; z++) {
        const zone = restrict(run, edges[z]!, edges[z + 1]!).flatMap((row) => row.fragments);
        tables.push(...findTables(zone, depth + 1));
      }
      i = floor = b + 1;
    } else {
      i = seed[0] + 1;
    }
  }
  return tables;
}

/**
 * Where to cut a run that is not a table into zones to search on their own: at the gutters beside its columns
 * of running text (the sidebar stays whole, its own columns intact), or at every gutter when there are none.
 */
function zoneCuts(run: Row[], minGutter: number): number[] {
  const columns = columnsOf(run, minGutter);
  const long = columnCells(run, columns).map(isLong);
  const anyLong = long.some(Boolean);
  const cuts: number[] = [];
  for (let k = 0; k + 1 < columns.length; k++) {
    if (!anyLong || long[k] || long[k + 1]) cuts.push((columns[k]![1] + columns[k + 1]![0]) / 2);
  }
  return cuts;
}

/**
 * A column of running text that goes on above or below the table, beside it but not across it, is a column of
 * the page (the text next to a sidebar), not a column of the table.
 */
function flowsPast(table: Table, rows: Row[]): boolean {
  const height = (table.y1 - table.y0) / table.cells.length;
  const outside = rows.filter((row) => (row.y0 + row.y1) / 2 < table.y0 || (row.y0 + row.y1) / 2 > table.y1);
  return table.long.some((k) => {
    const [c0, c1] = table.columns[k]!;
    const left = k > 0 ? table.columns[k - 1]![1] : -Infinity;
    const right = k + 1 < table.columns.length ? table.columns[k + 1]![0] : Infinity;
    const flows = (row: Row) => {
      const words = rowWords(row).filter(isContent);
      const inside = words.filter((w) => (w.x0 + w.x1) / 2 >= c0 && (w.x0 + w.x1) / 2 <= c1);
      // Across the gutter's middle: a line of the page running over the table's width, not beside it.
      const across = words.some(
        (w) => (w.x0 < (left + c0) / 2 && w.x1 > left) || (w.x1 > (c1 + right) / 2 && w.x0 < right),
      );
      return inside.length > SHORT_CELL_WORDS && !across;
    };
    const near = (row: Row) => {
      const words = rowWords(row).filter((w) => isContent(w) && (w.x0 + w.x1) / 2 >= c0 && (w.x0 + w.x1) / 2 <= c1);
      return words.length > 0;
    };
    const above = outside.filter((row) => row.y1 <= table.y0 + height / 2 && near(row)).at(-1);
    const below = outside.find((row) => row.y0 >= table.y1 - height / 2 && near(row));
    return (
      (above !== undefined && table.y0 - above.y1 <= MAX_ROW_GAP * height && flows(above)) ||
      (below !== undefined && below.y0 - table.y1 <= MAX_ROW_GAP * height && flows(below))
    );
  });
}

/**
 * Rivers: in justified text, wide word spaces can line up over a few lines of a paragraph. A "table" whose
 * nearest lines above and below follow at its own line spacing and start and end where it does is such a stretch
 * of a paragraph; a real table stands apart from the text around it.
 */
function embedded(table: Table, rows: Row[], slack: number): boolean {
  const spans = table.cells.length;
  const height = (table.y1 - table.y0) / spans;
  const inside = rows.filter((row) => (row.y0 + row.y1) / 2 >= table.y0 && (row.y0 + row.y1) / 2 <= table.y1);
  const gaps = inside.slice(1).map((row, k) => row.y0 - inside[k]!.y1);
  const tight = median(gaps) + height / 2;
  // Justified: the paragraph's lines start and end where the "table" does.
  const wide = (row: Row) => {
    const words = rowWords(row).filter(isContent);
    return (
      Math.abs(Math.min(...words.map((w) => w.x0)) - table.x0) <= slack &&
      Math.abs(Math.max(...words.map((w) => w.x1)) - table.x1) <= slack
    );
  };
  const above = rows.filter((row) => row.y1 <= table.y0 + height / 2 && !inside.includes(row)).at(-1);
  const below = rows.find((row) => row.y0 >= table.y1 - height / 2 && !inside.includes(row));
  return (
    above !== undefined &&
    below !== undefined &&
    table.y0 - above.y1 <= tight &&
    below.y0 - table.y1 <= tight &&
    wide(above) &&
    wide(below)
  );
}

/**
 * The first row from `from` that starts a seed: three close rows in two or more parts that share a gutter, with
 * at most one row in one part between two of them when it lies beside them (a line of the text next to a table,
 * set at another pitch) or within a later column (a wrapped cell). Returns [start, end] or null.
 */
function findSeed(rows: Row[], from: number, minGutter: number): [number, number] | null {
  for (let s = from; s + MIN_ROWS <= rows.length; s++) {
    if (!hasGutter(rows[s]!, minGutter)) continue;
    let parts = 1;
    let e = s;
    while (parts < MIN_ROWS && e + 1 < rows.length && e - s < 2 * MIN_ROWS - 2) {
      e++;
      if (hasGutter(rows[e]!, minGutter)) parts++;
      else if (!hasGutter(rows[e - 1]!, minGutter)) break;
    }
    if (parts < MIN_ROWS) continue;
    const window = rows.slice(s, e + 1);
    // A row in one part inside the seed must lie beside it (the text next to a table) or continue a cell of a
    // later column (a wrapped description), not start a row of its own.
    const parted = window.filter((row) => hasGutter(row, minGutter));
    const [x0, x1] = extent(parted);
    const columns = columnsOf(parted, minGutter);
    const fits = (row: Row) => {
      if (!overlapsExtent(row, x0, x1)) return true;
      const words = rowWords(row).filter(isContent);
      const k = columnIndex(words[0]!, columns);
      const right = columns[k + 1]?.[0] ?? Infinity;
      return k > 0 && words.every((w) => w.x0 > columns[k - 1]![1] && w.x1 < right);
    };
    if (!window.every((row) => parted.includes(row) || fits(row))) continue;
    const height = median(window.map((row) => row.y1 - row.y0));
    if (window.some((row, k) => k > 0 && row.y0 - window[k - 1]!.y1 > MAX_ROW_GAP * height)) continue;
    if (guttersOf(coverage(window), minGutter).length > 0) return [s, e];
  }
  return null;
}

/**
 * Extend the seed up and down while each added row keeps every column boundary (it may narrow a gutter, split
 * one, or sit in a single column, like a group label) and follows within a few row heights.
 */
function grow(rows: Row[], seed: [number, number], minGutter: number, floor: number): [number, number] {
  let [a, b] = seed;
  const height = median(rows.slice(a, b + 1).map((row) => row.y1 - row.y0));
  let covered = coverage(rows.slice(a, b + 1));
  let gutters = guttersOf(covered, minGutter);
  const tryAdd = (row: Row, gap: number): boolean => {
    if (gap > MAX_ROW_GAP * height) return false;
    const next = mergeIntervals([...covered, ...coverage([row])]);
    const nextGutters = guttersOf(next, minGutter);
    const keeps = gutters.every(([g0, g1]) => nextGutters.some(([h0, h1]) => h0 >= g0 - 1e-6 && h1 <= g1 + 1e-6));
    if (!keeps) return false;
    covered = next;
    gutters = nextGutters;
    return true;
  };
  while (b + 1 < rows.length && tryAdd(rows[b + 1]!, rows[b + 1]!.y0 - rows[b]!.y1)) b++;
  while (a > floor && tryAdd(rows[a - 1]!, rows[a]!.y0 - rows[a - 1]!.y1)) a--;
  return [a, b];
}
