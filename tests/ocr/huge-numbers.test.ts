import { PDFDocument, PDFOperator, StandardFonts, beginText, endText, setFontAndSize, showText } from "pdf-lib";
import { describe, expect, it } from "vitest";
import { getPdfPage, openPdf, readTextLayer } from "@/lib/ocr/engine/pdf";
import { pagedFormats } from "@/lib/ocr";

/*
 * Issue 29, point 6: a text matrix holding a 400-digit number (pdf.js reads it as Infinity) gave word boxes `null` in
 * JSON and `NaN` in hOCR, TSV and ALTO. Non-finite positions are clamped to the page: every box is numbers in 0–1.
 */

async function pdfWithHugeMatrix(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const page = doc.addPage([612, 792]);
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const name = page.node.newFontDictionary("F1", font.ref);
  const digits = "9".repeat(400);
  const matrix = (...operands: string[]) => PDFOperator.of("Tm" as never, operands);
  page.pushOperators(
    beginText(), setFontAndSize(name, 12), matrix("1", "0", "0", "1", digits, "600"), showText(font.encodeText("HUGE X")), endText(),
    beginText(), setFontAndSize(name, 12), matrix(digits, "0", "0", digits, "100", `-${digits}`), showText(font.encodeText("HUGE SIZE")), endText(),
    beginText(), setFontAndSize(name, 12), matrix("1", "0", "0", "1", "100", "500"), showText(font.encodeText("NORMAL 42")), endText(),
  );
  return doc.save();
}

describe("a PDF text layer with 400-digit numbers in its text matrices", () => {
  it("every word box is finite and on the page in JSON, hOCR, TSV and ALTO; the readable text is kept", async () => {
    const handle = await openPdf(await pdfWithHugeMatrix());
    const { page } = await readTextLayer(await getPdfPage(handle, 1), 1);
    expect(page.text).toContain("NORMAL 42");
    const boxes = page.blocks.flatMap((block) => [block.bbox, ...block.lines.flatMap((line) => [line.bbox, ...line.words.map((word) => word.bbox)])]);
    expect(boxes.length).toBeGreaterThan(0);
    for (const box of boxes) for (const value of box) expect(Number.isFinite(value) && value >= 0 && value <= 1, JSON.stringify(box)).toBe(true);
    const json = pagedFormats.json.page(page);
    expect(json).not.toMatch(/null|NaN|Infinity/);
    for (const format of ["hocr", "tsv", "alto"] as const) expect(pagedFormats[format].page(page), format).not.toMatch(/NaN|Infinity|undefined/);
  });
});
