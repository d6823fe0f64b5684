import { createCanvas } from "@napi-rs/canvas";
import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { extractDocument, render } from "@/lib/ocr";
import { findPaper } from "@/lib/ocr/engine/paper";
import { getEnv } from "@/lib/env";
import { createTestPool } from "../support/ocr";
import { texturedPhoto, type TexturedPhotoOptions } from "../support/textured-photo";

/**
 * Issue 39, item 8: a phone photo of a printed page on a table came back with 13 lines of garbage read from the table
 * and without three of its headings. The photo's sheet is found (the brightest large convex region, its surround
 * darker and around it) and only the sheet is read, in light evened out across it (lib/ocr/engine/paper.ts).
 */
const pool = createTestPool();
afterAll(() => pool.terminate());

const read = (jpeg: Uint8Array) => extractDocument(jpeg, { env: getEnv(), pool, deadline: Date.now() + 170_000 });

/** The answer's lines that match no line of the page (a character error rate over 0.34 against every one). */
function strayLines(text: string, truth: string[]): string[] {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.length > 0)
    .filter((line) => truth.every((t) => characterErrorRate(line, t) > 0.34));
}

const photos: [string, TexturedPhotoOptions][] = [
  // The sheet a third of the photo, on wood grain that runs up the page: read as turned, and as garbage, before.
  ["a small sheet on wood", { surface: "wood", rotation: -2, keystone: 0.1, pageShare: 0.55, seed: 4 }],
  ["a sheet on woven cloth, turned −4°", { surface: "fabric", rotation: -4, keystone: 0.08, pageShare: 0.7, seed: 2 }],
  ["a sheet on a dark desk, a shadow across it", { surface: "desk", rotation: 2, keystone: 0.04, pageShare: 0.78 }],
  // A close-up: the sheet runs off the photo's sides and bottom, the table shows only above it.
  ["a close-up on wood", { surface: "wood", rotation: 1.5, keystone: 0.03, pageShare: 1.1, shift: 0.2, seed: 5 }],
];

describe("a photo of a page on a table: the table's texture does not reach the text", () => {
  it.each(photos)("%s: every line of the page and nothing else", { timeout: 180_000 }, async (_name, options) => {
    const photo = texturedPhoto(options);
    const doc = await read(new Uint8Array(photo.canvas.toBuffer("image/jpeg", 90)));
    const text = render(doc, "text");
    expect(strayLines(text, photo.lines)).toEqual([]);
    // Headings in large type and the short lines are all there.
    for (const heading of ["Annual Garden Report", "Spring Planting", "Summer Harvest", "Plans for Next Year"])
      expect(text).toContain(heading);
    expect(text).toContain("Notes:");
    expect(characterErrorRate(text, photo.truth)).toBeLessThan(0.03);
  });

  it("a scan (paper to every edge), a dark side panel and a screenshot are left as they are", () => {
    const scan = createCanvas(1200, 1600);
    const ctx = scan.getContext("2d");
    ctx.fillStyle = "#fbfbf8";
    ctx.fillRect(0, 0, 1200, 1600);
    ctx.fillStyle = "#111111";
    for (let y = 100; y < 1500; y += 40) ctx.fillRect(100, y, 900, 14);
    expect(findPaper(scan, 1200, 1600)).toBeNull();
    // A dark sidebar down one side (a screenshot, a designed page): the bright part is not surrounded by it.
    ctx.fillStyle = "#202428";
    ctx.fillRect(0, 0, 360, 1600);
    expect(findPaper(scan, 1200, 1600)).toBeNull();
    // A white window on a dark screen (a screenshot): bright, convex, surrounded, but its surround is flat.
    ctx.fillStyle = "#1e1f22";
    ctx.fillRect(0, 0, 1200, 1600);
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(250, 300, 700, 900);
    ctx.fillStyle = "#d0d0d0";
    for (let y = 60; y < 1560; y += 48) ctx.fillRect(40, y, y > 280 && y < 1220 ? 160 : 1100, 12);
    expect(findPaper(scan, 1200, 1600)).toBeNull();
  });

  it("the sheet of a photo is found, and covers the page's text", () => {
    const photo = texturedPhoto({ surface: "wood", rotation: 3, pageShare: 0.72, seed: 1 });
    const paper = findPaper(photo.canvas, photo.canvas.width, photo.canvas.height);
    expect(paper).not.toBeNull();
    // The sheet is 72% of the photo's width, 1.29 times as tall as wide: about 53% of the photo.
    expect(paper!.share).toBeGreaterThan(0.45);
    expect(paper!.share).toBeLessThan(0.62);
  });
});
