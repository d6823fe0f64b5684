import type { ExtractedDocument, ExtractedPage, LineStyle, OcrBlock } from "./document";

/**
 * Bullet glyphs seen in real documents, and what OCR makes of them (`«` for a round bullet, `o` for a
 * hollow one), followed by a space. A French opening quote `«` is not a bullet when its `»` follows.
 */
const BULLET = /^\s*(?:[•●▪■□◦○◆◇❖➢➤►▸‣⁃∙·*+\-–—]|o(?=\s)|«(?![^»]*»))\s+/u;
/** `1.`, `1)`, `(1)`, `a)`, `iv.` followed by a space (lower-case letters only: "A. Smith" is a name). */
const NUMBERED = /^\s*\(?(?:(\d{1,3})|([a-h])|((?=[ivx])x{0,3}(?:ix|iv|v?i{0,3})))[.)]\s+/;

const HEADING_RATIO = 1.25;
const MAX_HEADING_CHARS = 120;

interface Item {
  kind: "heading" | "paragraph" | "list" | "code";
  text: string;
}

/** Markdown reconstructed from layout; the same rules for scanned and text-layer pages. */
export function renderMarkdown(document: ExtractedDocument): string {
  return document.pages
    .map((page) => renderPage(page))
    .join("\n\n---\n\n")
    .trim();
}

function renderPage(page: ExtractedPage): string {
  const body = bodySize(page);
  const items: Item[] = [];
  page.blocks.forEach((block, b) => {
    const styles = page.lineStyles[b] ?? [];
    items.push(...blockItems(block, styles, body));
  });
  const out: string[] = [];
  items.forEach((item, i) => {
    const prev = items[i - 1];
    // Consecutive list items stay together; everything else is separated by a blank line.
    if (prev) out.push(item.kind === "list" && prev.kind === "list" ? "\n" : "\n\n");
    out.push(item.text);
  });
  return out.join("");
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

function blockItems(block: OcrBlock, styles: LineStyle[], body: number): Item[] {
  const lines = block.lines.map((line) => line.text.trim()).filter(Boolean);
  if (lines.length === 0) return [];
  const sizes = styles.map((s) => s.size);
  const blockSize = median(sizes);

  if (styles.length > 0 && styles.every((s) => s.monospace)) {
    return [{ kind: "code", text: "```\n" + block.lines.map((l) => l.text).join("\n") + "\n```" }];
  }

  const level = headingLevel(blockSize, body);
  const joined = lines.join(" ");
  if (level > 0 && lines.length <= 3 && joined.length <= MAX_HEADING_CHARS && !BULLET.test(joined)) {
    return [{ kind: "heading", text: `${"#".repeat(level)} ${joined.replace(/\s+/g, " ")}` }];
  }

  const items: Item[] = [];
  let paragraph: string[] = [];
  let listItem: string[] | undefined;
  const flushParagraph = () => {
    if (paragraph.length > 0) items.push({ kind: "paragraph", text: escapeLineStart(joinLines(paragraph)) });
    paragraph = [];
  };
  const flushList = () => {
    if (listItem) items.push({ kind: "list", text: joinLines(listItem) });
    listItem = undefined;
  };
  for (const line of lines) {
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
      paragraph.push(line);
    }
  }
  flushParagraph();
  flushList();
  return items;
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
  return text.replace(/^(#{1,6}\s|>|\d+[.)]\s|[-*+]\s|```)/, "\\$1");
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
