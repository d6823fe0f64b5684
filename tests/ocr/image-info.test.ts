import { loadImage } from "@napi-rs/canvas";
import { describe, expect, it } from "vitest";
import { exifOrientation, isTransposed, readImageInfo } from "@/lib/ocr/model/image-info";
import { expectOcrError, fixture } from "../support/ocr";

type ImageType = "png" | "jpeg" | "webp";

/** An APP1 body ("Exif\0\0" + TIFF) with an IFD0 of the given (tag, value) SHORT entries, in either byte order. */
function exifSegment(order: "II" | "MM", entries: Array<[tag: number, value: number]>): Uint8Array {
  const little = order === "II";
  const tiff = Buffer.alloc(8 + 2 + entries.length * 12 + 4);
  const u16 = (value: number, offset: number) =>
    little ? tiff.writeUInt16LE(value, offset) : tiff.writeUInt16BE(value, offset);
  const u32 = (value: number, offset: number) =>
    little ? tiff.writeUInt32LE(value, offset) : tiff.writeUInt32BE(value, offset);
  tiff.write(order, 0, "latin1");
  u16(42, 2);
  u32(8, 4); // IFD0 right after the header
  u16(entries.length, 8);
  entries.forEach(([tag, value], i) => {
    const at = 10 + i * 12;
    u16(tag, at);
    u16(3, at + 2); // SHORT
    u32(1, at + 4); // one value
    u16(value, at + 8); // left-justified in the 4-byte value field
  });
  return new Uint8Array(Buffer.concat([Buffer.from("Exif\0\0", "latin1"), tiff]));
}

/** A JPEG with an APP1 segment inserted right after SOI. */
function withApp1(jpeg: Uint8Array, segment: Uint8Array): Uint8Array {
  const marker = Buffer.from([0xff, 0xe1, 0, 0]);
  marker.writeUInt16BE(segment.length + 2, 2);
  return new Uint8Array(Buffer.concat([jpeg.subarray(0, 2), marker, segment, jpeg.subarray(2)]));
}

const ORIENTATION = 0x0112;

describe("readImageInfo: dimensions from the header equal the decoded image", () => {
  const cases: Array<[file: string, type: ImageType]> = [
    ["paragraph.png", "png"],
    ["paragraph.jpg", "jpeg"],
    ["paragraph.webp", "webp"],
    ["small-text.png", "png"],
    ["two-column.png", "png"],
    ["receipt.png", "png"],
  ];

  it.each(cases)("%s", async (file, type) => {
    const bytes = fixture(file);
    const info = readImageInfo(bytes, type);
    const decoded = await loadImage(Buffer.from(bytes));
    expect({ width: info.width, height: info.height, orientation: info.orientation }).toEqual({
      width: decoded.width,
      height: decoded.height,
      orientation: 1,
    });
  });

  it.each([
    ["paragraph-exif3.jpg", 3],
    ["paragraph-exif6.jpg", 6],
    ["paragraph-exif8.jpg", 8],
  ] as const)(
    "%s: orientation %i and the stored (turned) size; upright it is the decoded size",
    async (file, orientation) => {
      const bytes = fixture(file);
      const info = readImageInfo(bytes, "jpeg");
      expect(info.orientation).toBe(orientation);
      // The fixtures store the 1500×300 page turned; 6 and 8 are stored 300 wide and 1500 high.
      expect([info.width, info.height]).toEqual(isTransposed(orientation) ? [300, 1500] : [1500, 300]);
      const decoded = await loadImage(Buffer.from(bytes));
      const upright = isTransposed(info.orientation) ? [info.height, info.width] : [info.width, info.height];
      expect(upright).toEqual([decoded.width, decoded.height]);
    },
  );

  it("a PNG header's claim is read as is, so limits can refuse it before decoding", () => {
    expect(readImageInfo(fixture("hostile/huge-header.png"), "png")).toMatchObject({ width: 100_000, height: 100_000 });
    expect(readImageInfo(fixture("hostile/bomb.png"), "png")).toMatchObject({ width: 8000, height: 8000 });
  });

  it("hand-built WebP headers: lossy VP8 and lossless VP8L (the encoder here only writes VP8X)", () => {
    const vp8 = Buffer.alloc(30);
    vp8.write("RIFF", 0, "latin1");
    vp8.writeUInt32LE(22, 4);
    vp8.write("WEBPVP8 ", 8, "latin1");
    vp8.writeUInt32LE(10, 16);
    vp8.set([0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a], 20); // frame tag, start code
    vp8.writeUInt16LE(640, 26);
    vp8.writeUInt16LE(480 | (1 << 14), 28); // the top two bits are a scale, not size
    expect(readImageInfo(new Uint8Array(vp8), "webp")).toMatchObject({ width: 640, height: 480 });

    const vp8l = Buffer.alloc(30);
    vp8l.write("RIFF", 0, "latin1");
    vp8l.writeUInt32LE(22, 4);
    vp8l.write("WEBPVP8L", 8, "latin1");
    vp8l.writeUInt32LE(5, 16);
    vp8l[20] = 0x2f;
    vp8l.writeUInt32LE((1023 - 1) | ((77 - 1) << 14), 21);
    expect(readImageInfo(new Uint8Array(vp8l), "webp")).toMatchObject({ width: 1023, height: 77 });
  });
});

describe("readImageInfo reads a JPEG's markers as libjpeg does, so the size is the one the decoder will decode", () => {
  const jpeg = fixture("paragraph.jpg");
  /** The JPEG with `bytes` inserted right after SOI. */
  const afterSoi = (bytes: number[]) =>
    new Uint8Array(Buffer.concat([jpeg.subarray(0, 2), Buffer.from(bytes), jpeg.subarray(2)]));

  it("hostile/smuggled.jpg: `FF 00` + a length after SOI is padding, not a segment: the frame behind it is 12000×12000", () => {
    // The first reader skipped `FF 00 LL LL` as a segment and found the 64×64 frame after it.
    expect(readImageInfo(fixture("hostile/smuggled.jpg"), "jpeg")).toMatchObject({ width: 12_000, height: 12_000 });
  });

  it.each([
    ["fill bytes (FF FF FF) before a marker", [0xff, 0xff, 0xff]],
    ["a stuffed zero (FF 00) and garbage before the next marker", [0xff, 0x00, 0x12, 0x34]],
    ["a standalone RST0 marker", [0xff, 0xd0]],
  ])("%s: skipped as libjpeg skips them", async (_name, bytes) => {
    const input = afterSoi(bytes);
    const decoded = await loadImage(Buffer.from(input));
    expect(readImageInfo(input, "jpeg")).toMatchObject({ width: decoded.width, height: decoded.height });
  });
});

describe("exifOrientation", () => {
  it.each([1, 3, 6, 8] as const)("big-endian (MM) orientation %i", (value) => {
    expect(exifOrientation(exifSegment("MM", [[ORIENTATION, value]]))).toBe(value);
  });

  it.each([2, 5, 6, 7] as const)("little-endian (II) orientation %i", (value) => {
    expect(exifOrientation(exifSegment("II", [[ORIENTATION, value]]))).toBe(value);
  });

  it("finds the tag among other IFD entries, in both byte orders", () => {
    const entries: Array<[number, number]> = [
      [0x010f, 1], // Make
      [0x0110, 2], // Model
      [ORIENTATION, 8],
      [0x011a, 72], // XResolution
    ];
    expect(exifOrientation(exifSegment("II", entries))).toBe(8);
    expect(exifOrientation(exifSegment("MM", entries))).toBe(8);
  });

  it.each([
    ["no orientation tag", exifSegment("II", [[0x010f, 1]])],
    ["an out-of-range value", exifSegment("MM", [[ORIENTATION, 9]])],
    ["zero", exifSegment("II", [[ORIENTATION, 0]])],
    ["not Exif (XMP)", new Uint8Array(Buffer.from("http://ns.adobe.com/xap/1.0/\0<x:xmpmeta/>", "latin1"))],
    ["an unknown byte order", new Uint8Array(Buffer.from("Exif\0\0XX\0*\0\0\0\x08\0\0\0\0", "latin1"))],
    ["a truncated IFD", exifSegment("MM", [[ORIENTATION, 6]]).subarray(0, 20)],
    [
      "an IFD offset past the end",
      (() => {
        const s = exifSegment("II", [[ORIENTATION, 6]]);
        new DataView(s.buffer, s.byteOffset).setUint32(10, 0xfffffff0, true);
        return s;
      })(),
    ],
    ["empty", new Uint8Array(0)],
  ])("%s → 1", (_name, segment) => {
    expect(exifOrientation(segment)).toBe(1);
  });

  it("inside a JPEG: a hand-built little-endian APP1 is read by readImageInfo", () => {
    const jpeg = fixture("paragraph.jpg");
    const info = readImageInfo(
      withApp1(
        jpeg,
        exifSegment("II", [
          [0x0110, 3],
          [ORIENTATION, 6],
        ]),
      ),
      "jpeg",
    );
    expect(info).toEqual({ width: 1500, height: 300, orientation: 6 });
    expect(readImageInfo(withApp1(jpeg, exifSegment("MM", [[ORIENTATION, 8]])), "jpeg").orientation).toBe(8);
  });
});

describe("readImageInfo: truncated or corrupt headers → unreadable", () => {
  const png = fixture("paragraph.png");
  const jpeg = fixture("paragraph.jpg");
  const webp = fixture("paragraph.webp");
  const sofOffset = (() => {
    for (let i = 2; i < jpeg.length - 1; i++) if (jpeg[i] === 0xff && jpeg[i + 1] === 0xc0) return i;
    throw new Error("paragraph.jpg has no baseline SOF0 marker");
  })();
  const zeroWidthPng = (() => {
    const copy = png.slice();
    copy.fill(0, 16, 20);
    return copy;
  })();

  const cases: Array<[name: string, input: Uint8Array, type: "png" | "jpeg" | "webp"]> = [
    ["hostile/truncated-header.png (20 bytes)", fixture("hostile/truncated-header.png"), "png"],
    ["PNG cut inside IHDR", png.subarray(0, 30), "png"],
    ["PNG signature only", png.subarray(0, 8), "png"],
    [
      "PNG whose first chunk is not IHDR",
      (() => {
        const copy = png.slice();
        copy.set(Buffer.from("IDAT", "latin1"), 12);
        return copy;
      })(),
      "png",
    ],
    ["PNG with zero width", zeroWidthPng, "png"],
    ["JPEG: SOI only", jpeg.subarray(0, 2), "jpeg"],
    ["JPEG cut before its frame header", jpeg.subarray(0, sofOffset), "jpeg"],
    ["JPEG cut inside its frame header", jpeg.subarray(0, sofOffset + 6), "jpeg"],
    ["JPEG with garbage where a marker belongs", Uint8Array.from([0xff, 0xd8, 0x12, 0x34, 0x56, 0x78]), "jpeg"],
    ["WebP cut after the RIFF header", webp.subarray(0, 20), "webp"],
    [
      "WebP with an unknown chunk",
      (() => {
        const copy = webp.slice();
        copy.set(Buffer.from("VP9 ", "latin1"), 12);
        return copy;
      })(),
      "webp",
    ],
  ];

  it.each(cases)("%s", async (_name, input, type) => {
    await expectOcrError(() => readImageInfo(input, type), "unreadable");
  });

  it("the PNG fixture's size sits at bytes 16–23 (so the cases above cut where they mean to)", () => {
    expect(readImageInfo(png, "png")).toMatchObject({ width: 1500, height: 300 });
    expect(sofOffset).toBeGreaterThan(2);
  });
});
