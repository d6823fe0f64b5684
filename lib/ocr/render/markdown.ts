import type { ExtractedDocument, ExtractedPage, LineStyle, OcrBlock, OcrLine } from "../model/document";
import { pageAsRead } from "../model/page-turn";
import { detectTables, renderTable, type DetectedTable } from "./tables";

/**
 * Bullet glyphs seen in real documents, and what OCR makes of them (`«` for a round bullet, `o` for a
 * hollow one), followed by a space. A French opening quote `«` is not a bullet when its `»` follows.
 */
const BULLET = /^\s*(?:[•●▪■□◦○◆◇❖➢➤►▸‣⁃∙·*+\-–—]|o(?=\s)|«(?![^»]*»))\s+/u;
/**
 * `1.`, `1)`, `(1)`, `a)`, `iv.` followed by a space (lower-case letters only: "A. Smith" is a name), but not a
 * telephone number's area code ("(203) 569-4345").
 */
const NUMBERED = /^\s*\(?(?:(\d{1,3})|([a-h])|((?=[ivx])x{0,3}(?:ix|iv|v?i{0,3})))[.)]\s+(?!\d{3}[-.\s]\d{4}\b)/;

const HEADING_RATIO = 1.25;
const MAX_HEADING_CHARS = 120;
/** Two lines whose sizes differ by at most this share of the larger are set in the same size. */
const SAME_SIZE = 0.2;
/** A line that ends a sentence (or a clause that may end a block: a colon, a semicolon), closing quotes aside. */
const ENDS_SENTENCE = /[.!?:;…]["'”’»)\]]*$/u;

/**
 * A money amount at the end of a line ("24.50", "1,234.00", "€9,99", "(12.00)"), optionally followed by a currency
 * code or sign: the last column of an invoice's or a receipt's item rows.
 */
const ENDS_WITH_AMOUNT = /(?:^|\s)[-+]?[$€£¥]?\(?\d{1,3}(?:[,.' ]?\d{3})*[.,]\d{2}\)?(?:\s?(?:[A-Z]{3}|[$€£¥%]))?$/u;
/** A line of nothing but `=` or `-`: under a line it would make that line a (setext) heading. */
const SETEXT_UNDERLINE = /^(?:=+|-+)\s*$/;

interface Item {
  kind: "heading" | "paragraph" | "list" | "code" | "table";
  text: string;
}

/** The last line of text before a block, in reading order, and its size (none after a table or at a page's top). */
interface Preceding {
  text: string;
  size: number;
}

/** Markdown reconstructed from layout; the same rules for scanned and text-layer pages. */
export function renderMarkdown(document: ExtractedDocument): string {
  return document.pages
    .map((page) => renderPage(page))
    .join("\n\n---\n\n")
    .trim();
}

function renderPage(asSent: ExtractedPage): string {
  // Layout rules read lines as they stood when the page was read (a turned page's boxes are on the page as sent).
  const page = pageAsRead(asSent);
  const body = bodySize(page);
  const items = pageItems(page, detectTables(page), body);
  const out: string[] = [];
  items.forEach((item, i) => {
    const prev = items[i - 1];
    // Consecutive list items stay together; everything else is separated by a blank line.
    if (prev) out.push(item.kind === "list" && prev.kind === "list" ? "\n" : "\n\n");
    out.push(item.text);
  });
  return out.join("");
}

/**
 * Blocks in their order, with each table in place of its words: it appears where its first word was, lines of
 * the blocks it took words from that stand above it come just before it, and what the blocks keep is rendered
 * as usual.
 */
function pageItems(page: ExtractedPage, tables: DetectedTable[], body: number): Item[] {
  const items: Item[] = [];
  let preceding: Preceding | undefined;
  /** A block's items; one that carries on the sentence the one before left open joins its paragraph. */
  const pushBlock = (block: OcrBlock, styles: LineStyle[]) => {
    const { items: own, continues } = blockItems(block, styles, body, preceding);
    const last = items.at(-1);
    if (continues && last?.kind === "paragraph" && own[0]?.kind === "paragraph") {
      last.text = joinLines([last.text, own.shift()!.text]);
    }
    items.push(...own);
    const lines = block.lines
      .map((line, l) => [line.text.trim(), styles[l]?.size ?? 0] as const)
      .filter(([text]) => text);
    const end = lines.at(-1);
    if (end) preceding = { text: end[0], size: end[1] };
  };
  if (tables.length === 0) {
    page.blocks.forEach((block, b) => pushBlock(block, page.lineStyles[b] ?? []));
    return items;
  }
  const taken = new Set<string>();
  const anchors = new Map<string, DetectedTable[]>();
  const before = new Map<DetectedTable, Array<[number, number]>>();
  const moved = new Set<string>();
  for (const table of tables) {
    for (const { block, line, word } of table.words) taken.add(`${block}:${line}:${word}`);
    const first = table.words.reduce((a, b) => (b.block < a.block || (b.block === a.block && b.line < a.line) ? b : a));
    const key = `${first.block}:${first.line}`;
    anchors.set(key, [...(anchors.get(key) ?? []), table]);
    const [x0, y0, x1, y1] = table.bbox;
    const rowHeight = (y1 - y0) / table.rows.length;
    const lines: Array<[number, number]> = [];
    page.blocks.forEach((block, b) =>
      block.lines.forEach((line, l) => {
        const later = b > first.block || (b === first.block && l > first.line);
        const [lx0, , lx1, ly1] = line.bbox;
        // A caption or column group label just above the table, which the segmentation read after its first cell.
        const above = ly1 <= y0 + 0.002 && ly1 >= y0 - 3 * rowHeight && lx0 >= x0 - 0.01 && lx1 <= x1 + 0.01;
        if (later && above && line.words.some((_, w) => !taken.has(`${b}:${l}:${w}`))) lines.push([b, l]);
      }),
    );
    for (const [b, l] of lines) moved.add(`${b}:${l}`);
    before.set(table, lines);
  }
  /** The line without the words a table took; undefined when none is left. */
  const remaining = (b: number, l: number): OcrLine | undefined => {
    const line = page.blocks[b]!.lines[l]!;
    const words = line.words.filter((_, w) => !taken.has(`${b}:${l}:${w}`));
    if (words.length === line.words.length) return line;
    if (words.length === 0) return undefined;
    return { ...line, text: words.map((w) => w.text).join(" "), words };
  };
  const emit = (b: number, lines: Array<[OcrLine, LineStyle | undefined]>) => {
    if (lines.length === 0) return;
    const block: OcrBlock = { ...page.blocks[b]!, lines: lines.map(([line]) => line) };
    const styles = lines.flatMap(([, style]) => (style ? [style] : []));
    pushBlock(block, styles);
  };
  page.blocks.forEach((block, b) => {
    let pending: Array<[OcrLine, LineStyle | undefined]> = [];
    block.lines.forEach((_, l) => {
      for (const table of anchors.get(`${b}:${l}`) ?? []) {
        emit(b, pending);
        pending = [];
        for (const [mb, ml] of before.get(table) ?? []) {
          const line = remaining(mb, ml);
          if (line) emit(mb, [[line, page.lineStyles[mb]?.[ml]]]);
        }
        items.push({ kind: "table", text: renderTable(table.rows) });
        preceding = undefined;
      }
      if (moved.has(`${b}:${l}`)) return;
      const line = remaining(b, l);
      if (line) pending.push([line, page.lineStyles[b]?.[l]]);
    });
    emit(b, pending);
  });
  return items;
}

/** The size of body text: the character-weighted median line size of the page. */
function bodySize(page: ExtractedPage): number {
  const samples: Array<[number, number]> = [];
  page.blocks.forEach((block, b) =>
    block.lines.forEach((line, l) => {
      const size = page.lineStyles[b]?.[l]?.size ?? 0;
      if (size > 0) samples.push([size, line.text.length]);
    }),
  );
  if (samples.length === 0) return 0;
  samples.sort((a, b) => a[0] - b[0]);
  const total = samples.reduce((sum, [, n]) => sum + n, 0);
  let acc = 0;
  for (const [size, n] of samples) {
    acc += n;
    if (acc >= total / 2) return size;
  }
  return samples[samples.length - 1]![0];
}

function headingLevel(size: number, body: number): number {
  if (body <= 0 || size < body * HEADING_RATIO) return 0;
  const ratio = size / body;
  return ratio >= 1.8 ? 1 : ratio >= 1.45 ? 2 : 3;
}

/**
 * Whether a block carries on the sentence the text before it left open (a paragraph cut by a column or page break,
 * or split into blocks by the segmentation): it starts with a small letter, the line before ends without a sentence's
 * end, and both are set in the same size. Such a block is never a heading, however large its type is against the
 * page's body (a two-column article beside a page of small print), and its first paragraph joins the one before.
 */
function continuesSentence(first: string, size: number, preceding: Preceding | undefined): boolean {
  if (!preceding || !/^\p{Ll}/u.test(first) || ENDS_SENTENCE.test(preceding.text)) return false;
  return Math.abs(size - preceding.size) <= SAME_SIZE * Math.max(size, preceding.size);
}

function blockItems(
  block: OcrBlock,
  styles: LineStyle[],
  body: number,
  preceding?: Preceding,
): { items: Item[]; continues: boolean } {
  const kept = block.lines.filter((line) => line.text.trim());
  const lines = kept.map((line) => line.text.trim());
  if (lines.length === 0) return { items: [], continues: false };
  const sizes = styles.map((s) => s.size);
  const blockSize = median(sizes);

  if (styles.length > 0 && styles.every((s) => s.monospace)) {
    return {
      items: [{ kind: "code", text: "```\n" + block.lines.map((l) => l.text).join("\n") + "\n```" }],
      continues: false,
    };
  }

  const level = headingLevel(blockSize, body);
  const joined = lines.join(" ");
  const continues = continuesSentence(lines[0]!, styles[0]?.size ?? blockSize, preceding);
  if (level > 0 && !continues && lines.length <= 3 && joined.length <= MAX_HEADING_CHARS && !BULLET.test(joined)) {
    return {
      items: [{ kind: "heading", text: `${"#".repeat(level)} ${joined.replace(/\s+/g, " ")}` }],
      continues: false,
    };
  }

  const breaks = hardBreaks(kept);
  const items: Item[] = [];
  // Each paragraph line with whether a hard break follows it.
  let paragraph: Array<[string, boolean]> = [];
  let listItem: string[] | undefined;
  const flushParagraph = () => {
    if (paragraph.length > 0) items.push({ kind: "paragraph", text: renderParagraph(paragraph) });
    paragraph = [];
  };
  const flushList = () => {
    if (listItem) items.push({ kind: "list", text: joinLines(listItem) });
    listItem = undefined;
  };
  lines.forEach((line, i) => {
    const bullet = line.match(BULLET);
    const numbered = bullet ? null : line.match(NUMBERED);
    if (bullet) {
      flushParagraph();
      flushList();
      listItem = [`- ${line.slice(bullet[0].length)}`];
    } else if (numbered) {
      flushParagraph();
      flushList();
      const marker = numbered[1] ?? numbered[2] ?? numbered[3] ?? "1";
      const n = /^\d+$/.test(marker) ? marker : "1";
      listItem = [`${n}. ${line.slice(numbered[0].length)}`];
    } else if (listItem) {
      listItem.push(line);
    } else {
      paragraph.push([line, breaks[i]!]);
    }
  });
  flushParagraph();
  flushList();
  return { items, continues };
}

/**
 * Whether each line ends where the writer ended it rather than where the text wrapped, so Markdown must keep the break
 * that `text` keeps (an invoice's item rows, an address, a header of short lines):
 *
 * - the next line's first word would have fitted in the room left on this line, up to the block's widest line (text
 *   wraps only when the next word does not fit; a centred or indented line has at least this much room, so the
 *   test never breaks a wrapped line), with one character's width of slack for the measurement; or
 * - this line and the one before or after it end with an amount: rows of items with their prices.
 *
 * A line ending in a hyphenated word part is a wrap. Lines without word boxes are never broken by the first rule.
 */
function hardBreaks(lines: OcrLine[]): boolean[] {
  const right = Math.max(...lines.map((line) => line.bbox[2]));
  const { space, char } = wordMetrics(lines);
  const amount = lines.map((line) => ENDS_WITH_AMOUNT.test(line.text.trim()));
  return lines.map((line, i) => {
    const next = lines[i + 1];
    if (!next) return false;
    if (amount[i] && (amount[i - 1] || amount[i + 1])) return true;
    const first = next.words[0];
    if (!first || line.words.length === 0 || /[A-Za-zÀ-ÿ]-$/.test(line.text.trim())) return false;
    return right - line.bbox[2] > first.bbox[2] - first.bbox[0] + space + char;
  });
}

/** The block's typical gap between words and width of a character (median; from word boxes, page-relative). */
function wordMetrics(lines: OcrLine[]): { space: number; char: number } {
  const gaps: number[] = [];
  const chars: number[] = [];
  for (const line of lines) {
    line.words.forEach((word, w) => {
      const width = word.bbox[2] - word.bbox[0];
      if (word.text.length > 0 && width > 0) chars.push(width / word.text.length);
      const next = line.words[w + 1];
      if (next && next.bbox[0] > word.bbox[2]) gaps.push(next.bbox[0] - word.bbox[2]);
    });
  }
  const char = median(chars);
  return { space: gaps.length > 0 ? median(gaps) : char, char };
}

/**
 * A paragraph's lines: wrapped lines joined, and a Markdown hard break (two spaces at the end of the line) where the
 * writer broke the line. A line that starts after a hard break is escaped like a paragraph's start.
 */
function renderParagraph(lines: Array<[string, boolean]>): string {
  const out: string[] = [];
  let run: string[] = [];
  for (const [line, hardBreak] of lines) {
    run.push(line);
    if (hardBreak) {
      out.push(escapeLineStart(joinLines(run)));
      run = [];
    }
  }
  if (run.length > 0) out.push(escapeLineStart(joinLines(run)));
  return out.join("  \n");
}

/** Join wrapped lines into one paragraph, mending words hyphenated at a line end. */
function joinLines(lines: string[]): string {
  let text = lines[0] ?? "";
  for (const line of lines.slice(1)) {
    if (/[A-Za-zÀ-ÿ]-$/.test(text) && /^[a-zà-ÿ]/.test(line)) text = text.slice(0, -1) + line;
    else text += " " + line;
  }
  return text;
}

/** Plain text that would read as markdown syntax at the start of a line gets a backslash. */
function escapeLineStart(text: string): string {
  if (SETEXT_UNDERLINE.test(text)) return `\\${text}`;
  return text.replace(/^(#{1,6}\s|>|\d+[.)]\s|[-*+]\s|```)/, "\\$1");
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
