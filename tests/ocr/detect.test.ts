import { describe, expect, it } from "vitest";
import { detectFileType, sniffFileType, type FileType } from "@/lib/ocr/model/detect";
import { expectOcrError } from "../support/ocr";

const bytes = (...parts: Array<string | number[]>): Uint8Array =>
  Uint8Array.from(parts.flatMap((part) => (typeof part === "string" ? Array.from(Buffer.from(part, "latin1")) : part)));
const junk = (length: number): number[] => Array.from({ length }, (_, i) => (i * 7 + 3) % 251 || 1);

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

describe("sniffFileType: magic bytes", () => {
  const cases: Array<[name: string, input: Uint8Array, expected: FileType | null]> = [
    ["PDF", bytes("%PDF-1.7\n%âãÏÓ\n1 0 obj"), "pdf"],
    ["PDF after a byte-order mark", bytes([0xef, 0xbb, 0xbf], "%PDF-1.4\n"), "pdf"],
    ["PDF after leading junk within 1 KiB", bytes(junk(1000), "%PDF-1.4\n"), "pdf"],
    ["PDF header too far in (2 KiB of junk)", bytes(junk(2048), "%PDF-1.4\n"), null],
    ["PDF magic cut short", bytes("%PDF"), null],
    ["PNG", bytes(PNG, [0, 0, 0, 13], "IHDR"), "png"],
    ["PNG signature, truncated", bytes(PNG.slice(0, 4)), null],
    ["JPEG (JFIF)", bytes([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10], "JFIF\0"), "jpeg"],
    ["JPEG (Exif)", bytes([0xff, 0xd8, 0xff, 0xe1, 0x00, 0x10], "Exif\0\0"), "jpeg"],
    ["JPEG, two bytes only", bytes([0xff, 0xd8]), null],
    ["WebP", bytes("RIFF", [0x24, 0, 0, 0], "WEBPVP8 "), "webp"],
    ["RIFF that is not WebP (WAVE)", bytes("RIFF", [0x24, 0, 0, 0], "WAVEfmt "), null],
    ["GIF87a", bytes("GIF87a", [1, 0, 1, 0]), null],
    ["GIF89a", bytes("GIF89a", [1, 0, 1, 0]), null],
    ["BMP", bytes("BM", [0x3a, 0, 0, 0, 0, 0, 0, 0, 0x36, 0, 0, 0]), null],
    ["TIFF, little-endian", bytes([0x49, 0x49, 0x2a, 0x00, 0x08, 0, 0, 0]), "tiff"],
    ["TIFF, big-endian", bytes([0x4d, 0x4d, 0x00, 0x2a, 0, 0, 0, 0x08]), "tiff"],
    // BigTIFF is recognised, then refused by the TIFF reader with its own message (tests/api/tiff.test.ts).
    ["BigTIFF", bytes([0x49, 0x49, 0x2b, 0x00, 0x08, 0, 0, 0]), "tiff"],
    ["ZIP", bytes([0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0]), null],
    ["AVIF", bytes([0, 0, 0, 0x20], "ftypavif"), null],
    ["HTML", bytes("<!doctype html><html><body>hi</body></html>"), null],
    ["plain text mentioning a PDF late", bytes("see the attached %PDF file"), null],
    ["empty", new Uint8Array(0), null],
  ];

  it.each(cases)("%s", (_name, input, expected) => {
    expect(sniffFileType(input)).toBe(expected);
  });

  it("the name or declared type never matters: only the bytes", () => {
    // A PNG's bytes are a PNG whatever it was called; an HTML page is not one whatever it was called.
    expect(sniffFileType(bytes(PNG, [0, 0, 0, 13], "IHDR"))).toBe("png");
    expect(sniffFileType(bytes("<html>scan.png</html>"))).toBeNull();
  });
});

describe("detectFileType: errors", () => {
  it.each([
    ["GIF", bytes("GIF89a", [1, 0, 1, 0, 0, 0, 0])],
    ["BMP", bytes("BM", [0x3a, 0, 0, 0])],
    ["a TIFF-like start (II, then 41)", bytes([0x49, 0x49, 0x29, 0x00])],
    ["ZIP", bytes([0x50, 0x4b, 0x03, 0x04])],
    ["HTML", bytes("<!doctype html>")],
    ["one byte", bytes([0x25])],
  ])("%s → unsupported_type", async (_name, input) => {
    await expectOcrError(() => detectFileType(input), "unsupported_type");
  });

  it("empty → empty_file", async () => {
    await expectOcrError(() => detectFileType(new Uint8Array(0)), "empty_file");
  });

  it.each([
    ["%PDF-1.7", "pdf"],
    ["RIFF\x10\0\0\0WEBPVP8L", "webp"],
    ["II*\0\x08\0\0\0", "tiff"],
  ] as const)("accepted types are returned: %s", (text, type) => {
    expect(detectFileType(bytes(text))).toBe(type);
  });
});
