import { PDFDocument, PDFOperator, StandardFonts, beginText, endText, setFontAndSize, showText } from "pdf-lib";
import { describe, expect, it } from "vitest";
import { getPdfPage, openPdf, readTextLayer } from "@/lib/ocr/engine/pdf";
import { pagedFormats, renderSearchablePdf } from "@/lib/ocr";
import { isOcrError } from "@/lib/ocr/model";
import { fromEngineError } from "@/lib/jobs";

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
    beginText(),
    setFontAndSize(name, 12),
    matrix("1", "0", "0", "1", digits, "600"),
    showText(font.encodeText("HUGE X")),
    endText(),
    beginText(),
    setFontAndSize(name, 12),
    matrix(digits, "0", "0", digits, "100", `-${digits}`),
    showText(font.encodeText("HUGE SIZE")),
    endText(),
    beginText(),
    setFontAndSize(name, 12),
    matrix("1", "0", "0", "1", "100", "500"),
    showText(font.encodeText("NORMAL 42")),
    endText(),
  );
  return doc.save();
}

describe("a PDF text layer with 400-digit numbers in its text matrices", () => {
  it("every word box is finite and on the page in JSON, hOCR, TSV and ALTO; the readable text is kept", async () => {
    const handle = await openPdf(await pdfWithHugeMatrix());
    const { page } = await readTextLayer(await getPdfPage(handle, 1), 1);
    expect(page.text).toContain("NORMAL 42");
    const boxes = page.blocks.flatMap((block) => [
      block.bbox,
      ...block.lines.flatMap((line) => [line.bbox, ...line.words.map((word) => word.bbox)]),
    ]);
    expect(boxes.length).toBeGreaterThan(0);
    for (const box of boxes)
      for (const value of box)
        expect(Number.isFinite(value) && value >= 0 && value <= 1, JSON.stringify(box)).toBe(true);
    const json = pagedFormats.json.page(page);
    expect(json).not.toMatch(/null|NaN|Infinity/);
    for (const format of ["hocr", "tsv", "alto"] as const)
      expect(pagedFormats[format].page(page), format).not.toMatch(/NaN|Infinity|undefined/);
  });
});

/** A one-page PDF written by hand (pdf-lib would not write these numbers), with a correct cross-reference table. */
function rawPdf(mediaBox: string): Uint8Array {
  const content = "BT /F1 24 Tf 50 700 Td (HELLO) Tj ET";
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    `<< /Type /Page /Parent 2 0 R /MediaBox ${mediaBox} /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>`,
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  let out = "%PDF-1.7\n";
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, "0")} 00000 n \n`).join("")}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return new Uint8Array(Buffer.from(out, "latin1"));
}

describe("format=pdf of a page with a huge MediaBox", () => {
  const digits = "9".repeat(400);
  const word = { text: "HELLO", confidence: 95, bbox: [0.1, 0.1, 0.3, 0.15] as [number, number, number, number] };
  const page = {
    number: 1,
    width: 612,
    height: 792,
    source: "ocr" as const,
    rotation: 0 as const,
    skew: 0,
    confidence: 95,
    text: "HELLO",
    blocks: [{ ...word, lines: [{ ...word, words: [word] }] }],
    lineStyles: [],
  };

  it.each([`[0 0 ${digits} ${digits}]`, `[-${digits} -${digits} ${digits} ${digits}]`, "[0 0 1e9 1e9]"])(
    "MediaBox %s → a searchable PDF or a clear 422 (unreadable_document), never a 500",
    async (box) => {
      const outcome = await renderSearchablePdf([page], { bytes: rawPdf(box), type: "pdf" }).then(
        (pdf) => ({ pdf }),
        (error: unknown) => ({ error }),
      );
      if ("pdf" in outcome) {
        expect(Buffer.from(outcome.pdf.subarray(0, 5)).toString()).toBe("%PDF-");
      } else {
        expect(isOcrError(outcome.error) && outcome.error.code, String(outcome.error)).toBe("unreadable");
        expect(fromEngineError(outcome.error)).toMatchObject({ code: "unreadable_document", status: 422 });
      }
    },
  );

  it("an ordinary MediaBox still makes the PDF", async () => {
    const pdf = await renderSearchablePdf([page], { bytes: rawPdf("[0 0 612 792]"), type: "pdf" });
    expect(Buffer.from(pdf.subarray(0, 5)).toString()).toBe("%PDF-");
  });
});
