import { deflateSync } from "node:zlib";
import { createCanvas } from "@napi-rs/canvas";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { decodeTiffPage } from "@/lib/ocr/engine/tiff";
import { isOcrError } from "@/lib/ocr/model/ocr-error";
import {
  checkTiffPage,
  MAX_TIFF_VALUES,
  readBudget,
  readTiffPages,
  squareHeight,
  type TiffReadMeter,
} from "@/lib/ocr/model/tiff";
import { decodeLzw, decodeSamples } from "@/lib/ocr/model/tiff-decode";
import { decodeFax, type FaxMeter } from "@/lib/ocr/model/tiff-fax";
import { writeTiff, writeTiffDirectoryBomb, type TiffPageInput } from "@/scripts/tiff-writer";

/*
 * The TIFF reader's own defences (issue 29 point 9), without an engine process: what the decoder would allocate is
 * checked from the directories, and the two codecs utif2 is not trusted with (Deflate, LZW) stop at the page's room.
 */

const grey = (
  width: number,
  height: number,
  data: Uint8Array,
  compression: TiffPageInput["compression"] = 1,
): TiffPageInput => ({
  width,
  height,
  data,
  bitsPerSample: 8,
  samplesPerPixel: 1,
  photometric: 1,
  compression,
});

const codeOf = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return isOcrError(error) ? `${error.code}: ${error.message}` : String(error);
  }
  return "no error";
};

describe("TIFF structure (lib/ocr/model/tiff.ts)", () => {
  it("reads every page of a multi-page file, and refuses a directory chain that loops", () => {
    const page = grey(4, 4, new Uint8Array(16));
    const tiff = writeTiff([page, page, page]);
    expect(readTiffPages(tiff).map((p) => [p.number, p.width, p.height])).toEqual([
      [1, 4, 4],
      [2, 4, 4],
      [3, 4, 4],
    ]);
    // Point the last directory's next-IFD field back at the first.
    const pages = readTiffPages(tiff);
    const view = new DataView(tiff.buffer);
    const first = view.getUint32(4, true);
    let ifd = first;
    for (let i = 0; i < pages.length - 1; i++) ifd = view.getUint32(ifd + 2 + view.getUint16(ifd, true) * 12, true);
    view.setUint32(ifd + 2 + view.getUint16(ifd, true) * 12, first, true);
    expect(codeOf(() => readTiffPages(tiff))).toMatch(/^unreadable: .*form a loop/);
  });

  it("a directory bomb (entries sharing one array of values) is refused before its values are read (issue 39 point 9)", () => {
    // 1 MB of directories whose 80 000 StripOffsets entries all name the same 1000 (or 10 000) values: 80–800 million
    // numbers read on the server's main thread before the budget (0.7 s per MB at 1000 values, ten times that at 10 000).
    for (const values of [1000, 10_000]) {
      const bomb = writeTiffDirectoryBomb(1_000_000, values);
      const meter: TiffReadMeter = { bytes: 0, values: 0 };
      expect(codeOf(() => readTiffPages(bomb, meter))).toMatch(/^too_complex: The TIFF's directories read more data/);
      expect(meter.bytes).toBeLessThanOrEqual(readBudget(bomb.length));
      expect(meter.values).toBeLessThanOrEqual(MAX_TIFF_VALUES);
      // The work done is the file's own size, not a multiple of it.
      expect(meter.values * 4).toBeLessThanOrEqual(2 * bomb.length + 2 ** 20);
    }
    // A real multi-page file reads each of its bytes at most once.
    const page = { ...grey(64, 64, new Uint8Array(64 * 64)), rowsPerStrip: 1 };
    const tiff = writeTiff(Array.from({ length: 20 }, () => page));
    const meter: TiffReadMeter = { bytes: 0, values: 0 };
    expect(readTiffPages(tiff, meter)).toHaveLength(20);
    expect(meter.bytes).toBeLessThan(tiff.length);
    expect(meter.values).toBe(20 * (2 * 64 + 7));
  });

  it("limits come from the directory: pixels (stretched to square ones for a fax), and decoded bytes", () => {
    const [page] = readTiffPages(
      writeTiff([{ ...grey(8, 1, new Uint8Array(8)), declared: { width: 10_000, height: 5_000 } }]),
    );
    expect(codeOf(() => checkTiffPage(page!, 50e6))).toBe("no error");
    expect(codeOf(() => checkTiffPage(page!, 50e6 - 1))).toMatch(
      /^image_too_large: The TIFF's page 1 is 10000×5000 pixels/,
    );
    const fax = { ...page!, dpi: { x: 204, y: 98 } };
    expect(squareHeight(fax)).toBe(10_408);
    expect(codeOf(() => checkTiffPage(fax, 100e6))).toMatch(
      /^image_too_large: The TIFF's page 1 is 10000×10408 pixels/,
    );
  });
});

describe("TIFF decoding (lib/ocr/model/tiff-decode.ts, lib/ocr/engine/tiff.ts)", () => {
  it("LZW: round trip with the fixtures' writer; a code the table does not have is refused, not looped on", () => {
    const data = Uint8Array.from({ length: 20_000 }, (_, i) => (i % 251 < 90 ? (i * 7) & 0xff : i >> 6));
    const tiff = writeTiff([grey(200, 100, data, 5)]);
    expect(Buffer.from(decodeSamples(tiff, readTiffPages(tiff)[0]!)).equals(Buffer.from(data))).toBe(true);
    // Clear, then code 300 at once (the table ends at 257).
    const corrupt = Uint8Array.from([0x80, 0x00 | (300 >> 2), (300 & 3) << 6]);
    expect(codeOf(() => decodeLzw(corrupt, new Uint8Array(100)))).toMatch(
      /^unreadable: The TIFF's LZW data is corrupt/,
    );
  });

  it("Deflate: a strip inflating past its page is refused at the page's size, not inflated whole", () => {
    const bomb = deflateSync(new Uint8Array(64 * 1024 * 1024), { level: 9 }); // 64 MB of zeros in ~64 KB
    const page = { ...grey(100, 100, new Uint8Array(10_000), 8) };
    const tiff = writeTiff([page]);
    const [parsed] = readTiffPages(tiff);
    const file = new Uint8Array(tiff.length + bomb.length);
    file.set(tiff);
    file.set(bomb, tiff.length);
    const hostile = {
      ...parsed!,
      segments: [{ offset: tiff.length, length: bomb.length }],
      tags: { ...parsed!.tags, t273: [tiff.length], t279: [bomb.length] },
    };
    expect(codeOf(() => decodeSamples(file, hostile))).toMatch(
      /^unreadable: The TIFF's Deflate data is corrupt or larger than its page/,
    );
  });

  it("JPEG: a strip whose frame is larger than the strip is refused before Skia decodes it", async () => {
    const small = createCanvas(64, 64).toBuffer("image/jpeg");
    const big = createCanvas(3000, 2000).toBuffer("image/jpeg");
    const page = (jpeg: Uint8Array): TiffPageInput => ({
      width: 64,
      height: 64,
      data: jpeg,
      bitsPerSample: 8,
      samplesPerPixel: 3,
      photometric: 6,
      compression: 7,
    });
    await expect(decodeTiffPage(writeTiff([page(small)]), 1, 50e6)).resolves.toMatchObject({ width: 64, height: 64 });
    const refused = await decodeTiffPage(writeTiff([page(big)]), 1, 50e6).catch((error: unknown) => error);
    expect(isOcrError(refused) && `${refused.code}: ${refused.message}`).toMatch(
      /^image_too_large: .*hides a 3000×2000 JPEG in a 64×64 strip/,
    );
  });

  it("colour models: WhiteIsZero bits, palette and 8-bit grey are drawn as stored", async () => {
    const pixel = async (input: TiffPageInput) => {
      const image = await decodeTiffPage(writeTiff([input]), 1, 50e6);
      const canvas = image.source as unknown as ReturnType<typeof createCanvas>;
      return Array.from(canvas.getContext("2d").getImageData(0, 0, 2, 1).data);
    };
    // 1 bit, WhiteIsZero: bit 1 is black.
    expect(
      await pixel({
        width: 2,
        height: 1,
        data: Uint8Array.from([0b1000_0000]),
        bitsPerSample: 1,
        samplesPerPixel: 1,
        photometric: 0,
        compression: 32773,
      }),
    ).toEqual([0, 0, 0, 255, 255, 255, 255, 255]);
    const colorMap = [
      ...Array(256)
        .fill(0)
        .map((_, i) => (i === 1 ? 0xffff : 0)),
      ...Array(256).fill(0),
      ...Array(256)
        .fill(0)
        .map((_, i) => (i === 0 ? 0xffff : 0)),
    ];
    expect(
      await pixel({
        width: 2,
        height: 1,
        data: Uint8Array.from([0, 1]),
        bitsPerSample: 8,
        samplesPerPixel: 1,
        photometric: 3,
        compression: 1,
        colorMap,
      }),
    ).toEqual([0, 0, 255, 255, 255, 0, 0, 255]);
    expect(await pixel(grey(2, 1, Uint8Array.from([10, 200]), 8))).toEqual([10, 10, 10, 255, 200, 200, 200, 255]);
  });
});

describe("CCITT fax data (lib/ocr/model/tiff-fax.ts, issue 39 point 10)", () => {
  const committed = (name: string) =>
    new Uint8Array(fs.readFileSync(path.resolve(import.meta.dirname, "../fixtures/tiff", name)));
  const decodeFile = (name: string) => {
    const bytes = committed(name);
    return decodeSamples(bytes, readTiffPages(bytes)[0]!);
  };
  /** Deterministic bytes that are not fax data. */
  const noise = (length: number) => {
    let seed = 39;
    return Uint8Array.from({ length }, () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) >> 23);
  };
  const fax = {
    width: 1728,
    height: 2200,
    bitsPerSample: 1,
    samplesPerPixel: 1,
    photometric: 0,
    compression: 1,
  } as const;

  it("modified Huffman (5 strips), Group 3 two-dimensional (LSB first) and Group 4: the same pixels", () => {
    // The three files carry the same page (tests/fixtures/tiff/README.md); Group 4 is checked against ImageMagick's.
    const g4 = decodeFile("paragraph-g4.tif");
    expect(g4.reduce((black, byte) => black + (byte !== 0 ? 1 : 0), 0)).toBeGreaterThan(4000);
    expect(Buffer.from(decodeFile("paragraph-mh.tif")).equals(Buffer.from(g4))).toBe(true);
    expect(Buffer.from(decodeFile("paragraph-g3-2d.tif")).equals(Buffer.from(g4))).toBe(true);
  });

  it("data that is not fax (noise, zeros) is refused in each CCITT coding, its bits read at most about twice", () => {
    // utif2's decoders took seconds on 3 KB of it and minutes on 20 KB, then drew what they made of it.
    for (const compression of [2, 3, 4] as const) {
      for (const data of [noise(3000), new Uint8Array(3000)]) {
        const tiff = writeTiff([{ ...fax, data, declared: { compression } }]);
        expect(codeOf(() => decodeSamples(tiff, readTiffPages(tiff)[0]!))).toMatch(
          /^unreadable: The TIFF's CCITT data is not fax data/,
        );
        const big = compression === 4 ? noise(1_000_000) : new Uint8Array(1_000_000);
        const meter: FaxMeter = { bits: 0 };
        const options = { compression, lsbFirst: false, twoDimensional: compression === 3 };
        const out = new Uint8Array((fax.width / 8) * fax.height);
        expect(codeOf(() => decodeFax(big, out, fax.width, fax.height, options, meter))).toMatch(/^unreadable/);
        expect(meter.bits).toBeLessThanOrEqual(2 * 8 * big.length + 16 * fax.height);
      }
    }
  });

  it("a fax cut short keeps the rows it has past half its page; before half, it is refused", () => {
    const bytes = committed("paragraph-g4.tif");
    const page = readTiffPages(bytes)[0]!;
    const { offset, length } = page.segments[0]!;
    const options = { compression: 4, lsbFirst: false, twoDimensional: false } as const;
    const rows = (share: number) =>
      decodeFax(
        bytes.subarray(offset, offset + Math.floor(length * share)),
        new Uint8Array(Math.ceil(page.width / 8) * page.height),
        page.width,
        page.height,
        options,
      );
    expect(rows(1)).toBe(page.height);
    expect(rows(0.9)).toBeGreaterThan(page.height / 2);
    expect(rows(0.9)).toBeLessThan(page.height);
    expect(codeOf(() => rows(0.2))).toMatch(/^unreadable: The TIFF's CCITT data is not fax data \(end of data/);
  });
});
