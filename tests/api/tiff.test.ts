import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { getBalance } from "@/lib/credits";
import { ocrDocumentSchema } from "@/lib/ocr/model";
import { getStore } from "@/lib/store";
import { writeTiff, writeTiffDirectoryBomb } from "@/scripts/tiff-writer";
import { callOcr, createAccount, expectApiError, expectOcrOk, fixture, groundTruth, withStore } from "./support";

/*
 * Issue 29 point 9: TIFF, single- and multi-page, in every compression scanners and fax archives write, through the
 * REST route on the real engine: each page a page and a credit, `options.pages` selecting, the output formats on TIFF
 * pages, and the limits checked from the file's directories before a page is decoded.
 */

/** The fixtures are clean renders (the fax is at 204 × 98 dpi, half its rows: read stretched back to square pixels). */
const CER = 0.05;
const COMMITTED = path.resolve(import.meta.dirname, "../fixtures/tiff");
const committed = (name: string) => fs.readFileSync(path.join(COMMITTED, name));

const PAGES = ["Introduction", "Methods", "Results"];

function tempPdf(bytes: Uint8Array): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "ocr-tiff-")), "out.pdf");
  fs.writeFileSync(file, bytes);
  return file;
}

describe("TIFF through POST /api/ocr/process (issue 29 point 9)", () => {
  withStore("redis", { RATE_LIMIT_PER_MINUTE: "100000" });
  const paragraph = groundTruth("paragraph.png");

  const singlePages: Array<[string, Buffer]> = [
    ["uncompressed 8-bit grey", fixture("tiff/paragraph-none.tif")],
    ["LZW, 64-row strips", fixture("tiff/paragraph-lzw.tif")],
    ["Deflate", fixture("tiff/paragraph-deflate.tif")],
    ["PackBits, 1 bit", fixture("tiff/paragraph-packbits.tif")],
    ["JPEG (YCbCr)", fixture("tiff/paragraph-jpeg.tif")],
    ["CCITT Group 4", committed("paragraph-g4.tif")],
    ["CCITT Group 3, a fax at 204 × 98 dpi", committed("paragraph-g3-fax.tif")],
  ];
  it.each(singlePages)("%s: read as one page, one credit, its text within the CER bound", async (_name, bytes) => {
    const account = await createAccount(5);
    const body = await expectOcrOk(await callOcr({ image: bytes.toString("base64") }, { key: account.key }));
    expect(body).toMatchObject({ success: true, creditsUsed: 1, pageCount: 1 });
    expect(characterErrorRate(body.extractedText, paragraph)).toBeLessThan(CER);
    expect(await getBalance(getStore(), account.userId)).toBe(4);
  });

  it("a three-page TIFF is three pages and three credits, in order; options.pages reads and charges one", async () => {
    const account = await createAccount(10);
    const tiff = fixture("tiff/three-pages.tif").toString("base64");
    const all = await expectOcrOk(await callOcr({ image: tiff, options: { format: "json" } }, { key: account.key }));
    expect(all).toMatchObject({ creditsUsed: 3, pageCount: 3 });
    const document = ocrDocumentSchema.parse(JSON.parse(all.extractedText));
    expect(document.pages.map((page) => page.number)).toEqual([1, 2, 3]);
    const truths = groundTruth("tiff/three-pages.tif").trim().split("\n\n");
    document.pages.forEach((page, i) => {
      expect(page.text).toContain(PAGES[i]);
      expect(characterErrorRate(page.text, truths[i]!)).toBeLessThan(CER);
    });

    const second = await expectOcrOk(await callOcr({ image: tiff, options: { pages: "2" } }, { key: account.key }));
    expect(second).toMatchObject({ creditsUsed: 1, pageCount: 3 });
    expect(characterErrorRate(second.extractedText, truths[1]!)).toBeLessThan(CER);
    expect(await getBalance(getStore(), account.userId)).toBe(6);
    await expectApiError(
      await callOcr({ image: tiff, options: { pages: "4" } }, { key: account.key }),
      "invalid_request",
      /page 4 does not exist/,
    );
  });

  it("hOCR, ALTO, TSV and the searchable PDF on TIFF pages: one page each, the fax page sized by its resolution", async () => {
    const account = await createAccount(20);
    const tiff = fixture("tiff/three-pages.tif").toString("base64");
    const hocr = await expectOcrOk(
      await callOcr({ image: tiff, options: { format: "hocr", pages: "1-2" } }, { key: account.key }),
    );
    expect(hocr.extractedText.match(/class="ocr_page"/g)).toHaveLength(2);
    expect(hocr.extractedText).toContain("Methods");
    const alto = await expectOcrOk(
      await callOcr({ image: tiff, options: { format: "alto", pages: "3" } }, { key: account.key }),
    );
    expect(alto.extractedText).toMatch(/<Page [^>]*PHYSICAL_IMG_NR="3"/);
    const tsv = await expectOcrOk(
      await callOcr({ image: tiff, options: { format: "tsv", pages: "1" } }, { key: account.key }),
    );
    expect(tsv.extractedText).toContain("Introduction");

    const pdf = await expectOcrOk(await callOcr({ image: tiff, options: { format: "pdf" } }, { key: account.key }));
    const pdfFile = tempPdf(Buffer.from(pdf.extractedText, "base64"));
    expect(spawnSync("qpdf", ["--check", pdfFile]).status).toBe(0);
    const text = execFileSync("pdftotext", [pdfFile, "-"], { encoding: "utf8" });
    for (const heading of PAGES) expect(text).toContain(heading);
    expect(text.split("\f").filter((page) => page.trim() !== "")).toHaveLength(3);
    // 1500 × 300 pixels at 300 dpi: 360 × 72 points.
    expect(execFileSync("pdfinfo", [pdfFile], { encoding: "utf8" })).toMatch(/Page size:\s+360 x 72 pts/);

    const fax = await expectOcrOk(
      await callOcr(
        { image: committed("paragraph-g3-fax.tif").toString("base64"), options: { format: "pdf" } },
        { key: account.key },
      ),
    );
    const faxFile = tempPdf(Buffer.from(fax.extractedText, "base64"));
    // 1500 × 144 pixels at 204 × 98 dpi: 529.4 × 105.8 points, the page as the letter it was.
    expect(execFileSync("pdfinfo", [faxFile], { encoding: "utf8" })).toMatch(
      /Page size:\s+529\.41\d* x 105\.79\d* pts/,
    );
    expect(characterErrorRate(execFileSync("pdftotext", [faxFile, "-"], { encoding: "utf8" }), paragraph)).toBeLessThan(
      CER,
    );
  });

  it("a TIFF declaring 100 000 × 100 000 pixels: 413 from its directory, before decoding, nothing charged", async () => {
    const account = await createAccount(5);
    const response = await callOcr(
      { image: fixture("hostile/huge-header.tif").toString("base64") },
      { key: account.key },
    );
    await expectApiError(response, "payload_too_large", /page 1 is 100000×100000 pixels; the limit is 50 megapixels/);
    expect(await getBalance(getStore(), account.userId)).toBe(5);
  });

  it("a TIFF directory bomb (1 MB of entries sharing one array): 413 before its values are read, nothing charged", async () => {
    const account = await createAccount(5);
    const bomb = Buffer.from(writeTiffDirectoryBomb(1_000_000, 10_000));
    await expectApiError(
      await callOcr({ image: bomb.toString("base64") }, { key: account.key }),
      "payload_too_large",
      /TIFF's directories read more data than the file holds/,
    );
    expect(await getBalance(getStore(), account.userId)).toBe(5);
  });

  it("a fax page of 100 KB that is not fax data: 422 from the decoder at once, not an engine held to its deadline", async () => {
    const account = await createAccount(5);
    let seed = 39;
    const data = Uint8Array.from({ length: 100_000 }, () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) >> 23);
    const page = { width: 1728, height: 2200, data, bitsPerSample: 1, samplesPerPixel: 1, photometric: 0 } as const;
    for (const compression of [2, 3, 4]) {
      const tiff = writeTiff([{ ...page, compression: 1, declared: { compression } }]);
      await expectApiError(
        await callOcr({ image: Buffer.from(tiff).toString("base64") }, { key: account.key }),
        "unreadable_document",
        /CCITT data is not fax data/,
      );
    }
    expect(await getBalance(getStore(), account.userId)).toBe(5);
  });

  it("a truncated TIFF: 422; a compression not read (JPEG 2000) and BigTIFF: 415; nothing charged", async () => {
    const account = await createAccount(5);
    await expectApiError(
      await callOcr({ image: fixture("hostile/truncated.tif").toString("base64") }, { key: account.key }),
      "unreadable_document",
      /TIFF file is truncated or corrupt/,
    );
    const jp2 = writeTiff([
      {
        width: 8,
        height: 8,
        data: new Uint8Array(64),
        bitsPerSample: 8,
        samplesPerPixel: 1,
        photometric: 1,
        compression: 1,
        declared: { compression: 34712 },
      },
    ]);
    await expectApiError(
      await callOcr({ image: Buffer.from(jp2).toString("base64") }, { key: account.key }),
      "unsupported_media_type",
      /compressed with method 34712/,
    );
    const bigTiff = Buffer.from([0x49, 0x49, 0x2b, 0x00, 0x08, 0x00, 0x00, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 0]);
    await expectApiError(
      await callOcr({ image: bigTiff.toString("base64") }, { key: account.key }),
      "unsupported_media_type",
    );
    expect(await getBalance(getStore(), account.userId)).toBe(5);
  });

  it("more TIFF pages than one request reads: 413 pointing to options.pages and the jobs", async () => {
    const account = await createAccount(100);
    const page = {
      width: 16,
      height: 16,
      data: new Uint8Array(256).fill(255),
      bitsPerSample: 8,
      samplesPerPixel: 1,
      photometric: 1,
      compression: 8,
    } as const;
    const many = writeTiff(Array.from({ length: 51 }, () => page));
    await expectApiError(
      await callOcr({ image: Buffer.from(many).toString("base64") }, { key: account.key }),
      "payload_too_large",
      /51 pages.*asynchronous job/,
    );
    expect(await getBalance(getStore(), account.userId)).toBe(100);
  });
});
