import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { PDFDocument } from "pdf-lib";
import { describe, expect, it } from "vitest";
import { renderSearchablePdf } from "@/lib/ocr";
import type { ExtractedPage } from "@/lib/ocr/model";
import { isOcrError } from "@/lib/ocr/model/ocr-error";
import { renderSearchablePdf as renderOnThisThread } from "@/lib/ocr/render/formats/pdf";

/*
 * The searchable PDF is made on a worker thread (lib/ocr/render/pdf-off-thread.ts), not on the server's main thread:
 * pdf-lib's parse, page copies and writing are synchronous, and a 40 MB scan held every other request of the process
 * for a second or more per page subset (issue 39 point 14). And a PDF that takes too long is ended.
 */

const MiB = 1024 * 1024;

/** A scan-like PDF: `pages` pages, each drawing an incompressible image of `mbPerPage` MB. */
async function scanPdf(pages: number, mbPerPage: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  for (let n = 1; n <= pages; n++) {
    const page = doc.addPage([595, 842]);
    const image = doc.context.flateStream(randomBytes(mbPerPage * MiB), {
      Type: "XObject",
      Subtype: "Image",
      Width: 1000,
      Height: 1000,
      ColorSpace: "DeviceGray",
      BitsPerComponent: 8,
    });
    page.node.newXObject("Im", doc.context.register(image));
  }
  return doc.save({ useObjectStreams: false });
}

/** An OCR page model with `words` words on it. */
function page(number: number, words = 600): ExtractedPage {
  const list = Array.from({ length: words }, (_, i) => {
    const x = (i % 30) / 30;
    const y = Math.floor(i / 30) / 40;
    return { text: `word${i}`, confidence: 90, bbox: [x, y, x + 0.03, y + 0.02] as [number, number, number, number] };
  });
  const text = list.map((word) => word.text).join(" ");
  return {
    number,
    width: 2480,
    height: 3508,
    source: "ocr",
    rotation: 0,
    skew: 0,
    confidence: 90,
    text,
    blocks: [
      { text, confidence: 90, bbox: [0, 0, 1, 1], lines: [{ text, confidence: 90, bbox: [0, 0, 1, 1], words: list }] },
    ],
    lineStyles: [],
  } as ExtractedPage;
}

describe("the searchable PDF off the main thread", () => {
  it("is made while the main thread's event loop stays free, and holds the pages asked for with their words", async () => {
    const source = await scanPdf(8, 5);
    const pages = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => page(n));
    // Once, so the thread is started and warm (as it is on a server after its first PDF).
    await renderSearchablePdf(pages.slice(0, 1), { bytes: source, type: "pdf" });

    const before = performance.eventLoopUtilization();
    const pdf = await renderSearchablePdf(pages, { bytes: source, type: "pdf" });
    const busy = performance.eventLoopUtilization(before);
    // Made on the main thread, the loop is busy nearly all the time (0.9–1.0); here it only copies the file and waits.
    expect(busy.utilization).toBeLessThan(0.4);

    const made = await PDFDocument.load(pdf);
    expect(made.getPageCount()).toBe(8);
    expect(pdf.byteLength).toBeGreaterThan(40 * MiB);
    // The same file as made on the calling thread.
    expect(Buffer.from(pdf).equals(Buffer.from(await renderOnThisThread(pages, { bytes: source, type: "pdf" })))).toBe(
      true,
    );
  });

  it("a PDF past its time is ended (too_complex); the next one is made on a new thread", async () => {
    const source = await scanPdf(4, 5);
    const pages = [1, 2, 3, 4].map((n) => page(n));
    const late = await renderSearchablePdf(pages, { bytes: source, type: "pdf" }, { timeoutMs: 1 }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(isOcrError(late) && late.code).toBe("too_complex");
    const pdf = await renderSearchablePdf(pages.slice(0, 2), { bytes: source, type: "pdf" });
    expect((await PDFDocument.load(pdf)).getPageCount()).toBe(2);
  });

  it("the thread's own failures come back as the engine's errors", async () => {
    const broken = new TextEncoder().encode("%PDF-1.7\n1 0 obj << /Type /Catalog >> nonsense");
    const error = await renderSearchablePdf([page(1)], { bytes: broken, type: "pdf" }).then(
      () => null,
      (failure: unknown) => failure,
    );
    expect(isOcrError(error) && error.code).toBe("unreadable");
  });
});
