import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { extractDocument, render } from "@/lib/ocr";
import { estimateLineDirection } from "@/lib/ocr/engine/orientation";
import { releaseSource } from "@/lib/ocr/engine/raster";
import { prepareRaster } from "@/lib/ocr/engine/recognize";
import { drawTurned } from "@/lib/ocr/engine/turned-raster";
import { pageTurn, type Quarter } from "@/lib/ocr/model/page-turn";
import { getEnv } from "@/lib/env";
import { createTestPool, parsedJson } from "../support/ocr";
import { tablePage, textPage, type TablePage } from "../support/table-pages";

/**
 * Issue 39: an upright table page was read as turned by a quarter (rotation 90, half the table lost). Its columns of
 * right-aligned numbers pile up across the page more than its rows do along it; a turn must also have the glyphs'
 * neighbours in a line run up or down the page (docs/decisions.md#orientation).
 */
const pool = createTestPool();
afterAll(() => pool.terminate());

/** The page as a caller sends it: turned clockwise by `rotation`, as a PNG. */
function sent({ canvas }: TablePage, rotation: Quarter): Uint8Array {
  if (rotation === 0) return new Uint8Array(canvas.toBuffer("image/png"));
  const turned = drawTurned(canvas, pageTurn(rotation, 0, canvas.width, canvas.height));
  const png = new Uint8Array(turned.toBuffer("image/png"));
  releaseSource(turned);
  return png;
}

const read = (png: Uint8Array) => extractDocument(png, { env: getEnv(), pool, deadline: Date.now() + 120_000 });

describe("an upright table of numbers is not turned", () => {
  it.each([true, false])("ruled %s: its glyphs say lines run across the page", (ruled) => {
    const { canvas } = tablePage({ ruled });
    const { analysis } = prepareRaster(canvas, canvas.width, canvas.height);
    expect(estimateLineDirection(analysis.glyphs, analysis.textHeight)?.quarter).toBe(0);
  });

  it.each([true, false])("ruled %s: read with rotation 0, every row kept (CER < 0.1)", async (ruled) => {
    const page = tablePage({ ruled });
    const doc = await read(sent(page, 0));
    expect(parsedJson(doc).pages[0]!.rotation).toBe(0);
    expect(characterErrorRate(render(doc, "text"), page.truth)).toBeLessThan(0.1);
  });

  it("the same generator's text page sent turned 90° is still turned (rotation 270) and read", async () => {
    const page = textPage();
    const { canvas } = page;
    const turned = drawTurned(canvas, pageTurn(90, 0, canvas.width, canvas.height));
    const { analysis } = prepareRaster(turned, turned.width, turned.height);
    expect(estimateLineDirection(analysis.glyphs, analysis.textHeight)?.quarter).toBe(90);
    releaseSource(turned);
    const doc = await read(sent(page, 90));
    expect(parsedJson(doc).pages[0]!.rotation).toBe(270);
    expect(characterErrorRate(render(doc, "text"), page.truth)).toBeLessThan(0.03);
  });
});
