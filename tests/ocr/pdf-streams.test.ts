import { brotliCompressSync, deflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { findOversizedStream, findPdfHazard } from "@/lib/ocr/engine/pdf-streams";
import { fixture } from "../support/ocr";

/** A PDF-like file with one stream object: `dict` (without /Length unless given) and its data. */
function fileWith(dict: string, data: Buffer, { length = true, object = "7 0" } = {}): Uint8Array {
  const head = Buffer.from(
    `%PDF-1.7\n${object} obj\n<< ${dict}${length ? ` /Length ${data.length}` : ""} >>\nstream\n`,
    "latin1",
  );
  const tail = Buffer.from("\nendstream\nendobj\n%%EOF\n", "latin1");
  return new Uint8Array(Buffer.concat([head, data, tail]));
}

const MiB = 1024 * 1024;
/** 16 MiB of spaces: ~16 KB deflated, so any limit under ~16 MB applies to it. */
const spaces = deflateSync(Buffer.alloc(16 * MiB, 0x20), { level: 9 });

describe("findOversizedStream", () => {
  it("finds a Flate stream that inflates past the limit, naming its object", async () => {
    expect(await findOversizedStream(fileWith("/Filter /FlateDecode", spaces), 8 * MiB)).toEqual({
      object: "7 0",
      limit: 8 * MiB,
    });
  });

  it("a stream under the limit passes", async () => {
    expect(await findOversizedStream(fileWith("/Filter /FlateDecode", spaces), 32 * MiB)).toBeNull();
  });

  it("finds it with the filter in an array, nested dictionaries, and an indirect /Length", async () => {
    const dict = "/DecodeParms << /Predictor 1 /Colors << >> >> /Filter [ /FlateDecode ] /Length 9 0 R";
    expect(await findOversizedStream(fileWith(dict, spaces, { length: false, object: "12 3" }), 8 * MiB)).toEqual({
      object: "12 3",
      limit: 8 * MiB,
    });
  });

  it("skips image decoders and unfiltered streams", async () => {
    const limit = 8 * MiB;
    expect(await findOversizedStream(fileWith("/Filter /DCTDecode", spaces), limit)).toBeNull();
    expect(await findOversizedStream(fileWith("/Filter /CCITTFaxDecode", spaces), limit)).toBeNull();
    expect(await findOversizedStream(fileWith("", spaces), limit)).toBeNull();
  });

  // Issue 20, point 9: each of these reached ~1 GB in pdf.js before the memory ceiling stopped it.
  describe("reads filters as pdf.js does", () => {
    const limit = 8 * MiB;
    const found = { object: "7 0", limit };

    it("a stream marked /Subtype /Image is checked too (pdf.js reads it as page content when a page says so)", async () => {
      expect(
        await findOversizedStream(fileWith("/Subtype /Image /Width 10 /Height 10 /Filter /FlateDecode", spaces), limit),
      ).toEqual(found);
    });

    it("a filter name with #xx escapes (/F#6cateDecode is /FlateDecode)", async () => {
      expect(await findOversizedStream(fileWith("/Filter /F#6cateDecode", spaces), limit)).toEqual(found);
      expect(
        await findOversizedStream(fileWith("/Filter [/#46#6c#61#74#65#44#65#63#6f#64#65]", spaces), limit),
      ).toEqual(found);
    });

    it("a filter given by an indirect reference: a name, an array, array elements, one inside an object stream", async () => {
      const withObjects = (dict: string, objects: string) =>
        new Uint8Array(
          Buffer.concat([
            Buffer.from(`%PDF-1.7\n${objects}`, "latin1"),
            Buffer.from(fileWith(dict, spaces)).subarray(9),
          ]),
        );
      expect(await findOversizedStream(withObjects("/Filter 9 0 R", "9 0 obj /FlateDecode endobj\n"), limit)).toEqual(
        found,
      );
      expect(await findOversizedStream(withObjects("/Filter 9 0 R", "9 0 obj [/FlateDecode] endobj\n"), limit)).toEqual(
        found,
      );
      expect(await findOversizedStream(withObjects("/Filter [9 0 R]", "9 0 obj /Fl endobj\n"), limit)).toEqual(found);
      // Object 9 packed in an object stream (compressed, as pdf-lib and most writers do).
      const packed = deflateSync(Buffer.from("9 0 /FlateDecode", "latin1"));
      const objectStream = `8 0 obj\n<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode /Length ${packed.length} >>\nstream\n`;
      const file = Buffer.concat([
        Buffer.from(`%PDF-1.7\n${objectStream}`, "latin1"),
        packed,
        Buffer.from("\nendstream\nendobj\n", "latin1"),
        Buffer.from(fileWith("/Filter 9 0 R", spaces)).subarray(9),
      ]);
      expect(await findOversizedStream(new Uint8Array(file), limit)).toEqual(found);
    });

    it("filter chains: [/ASCIIHexDecode /FlateDecode], [/A85 /Fl], and an unknown filter passing bytes through", async () => {
      const hex = Buffer.from(`${spaces.toString("hex")}>`, "latin1");
      expect(await findOversizedStream(fileWith("/Filter [/ASCIIHexDecode /FlateDecode]", hex), limit)).toEqual(found);
      expect(await findOversizedStream(fileWith("/Filter [/A85 /Fl]", ascii85(spaces)), limit)).toEqual(found);
      expect(await findOversizedStream(fileWith("/Filter [/NoSuchFilter /FlateDecode]", spaces), limit)).toEqual(found);
    });

    it("/F before /Filter (pdf.js reads the abbreviation in every stream), and /F naming something else wins", async () => {
      expect(await findOversizedStream(fileWith("/F /FlateDecode", spaces), limit)).toEqual(found);
      expect(await findOversizedStream(fileWith("/F (file.bin) /Filter /FlateDecode", spaces), limit)).toBeNull();
    });

    it("other expanding filters: LZW, RunLength, Brotli", async () => {
      expect(await findOversizedStream(fileWith("/Filter /LZWDecode", lzwRepeats(9 * MiB)), limit)).toEqual(found);
      const runs = Buffer.alloc(2 * Math.ceil((9 * MiB) / 128), 0);
      for (let i = 0; i < runs.length; i += 2) runs[i] = 129; // 128 copies of the next byte
      expect(await findOversizedStream(fileWith("/Filter /RunLengthDecode", runs), limit)).toEqual(found);
      expect(
        await findOversizedStream(
          fileWith("/Filter /BrotliDecode", brotliCompressSync(Buffer.alloc(16 * MiB, 0x20))),
          limit,
        ),
      ).toEqual(found);
    });

    it("a dictionary is read as tokens: `(<<)` in a string, comments, a key that is not a name", async () => {
      expect(await findOversizedStream(fileWith("/Note (<<) /Filter /FlateDecode", spaces), limit)).toEqual(found);
      expect(
        await findOversizedStream(fileWith("/Note (a >> b) % >> stream\n/Filter /FlateDecode", spaces), limit),
      ).toEqual(found);
      expect(await findOversizedStream(fileWith("[/Filter /FlateDecode]", spaces), limit)).toEqual(found);
    });
  });

  it("corrupt or truncated Flate data is pdf.js's business, not a bomb", async () => {
    const garbage = Buffer.alloc(64 * 1024, 0xab);
    expect(await findOversizedStream(fileWith("/Filter /FlateDecode", garbage), 1024)).toBeNull();
    expect(
      await findOversizedStream(fileWith("/Filter /FlateDecode", spaces.subarray(0, spaces.length >> 1)), 32 * MiB),
    ).toBeNull();
  });

  it("a file built to make reading its objects quadratic (each header opening a string that never closes) is refused as such", async () => {
    const file = new Uint8Array(Buffer.from(`%PDF-1.7\n${"1 0 obj ((\n".repeat(20_000)}`, "latin1"));
    expect(await findPdfHazard(file, { maxStreamBytes: 128 * MiB, maxImagePixels: 50_000_000 })).toEqual({
      kind: "structure",
    });
  });

  it("ignores `endstream` and text that merely says stream", async () => {
    const text = new Uint8Array(
      Buffer.from("%PDF-1.7\n% a comment about a stream\n1 0 obj (stream) endobj\nendstream\n", "latin1"),
    );
    expect(await findOversizedStream(text, 1024)).toBeNull();
  });

  it("the generated fixtures: the inflate bombs are found, ordinary PDFs are not", async () => {
    expect(await findOversizedStream(fixture("hostile/inflate-bomb.pdf"), 128 * MiB)).toEqual({
      object: "4 0",
      limit: 128 * MiB,
    });
    for (const [file, object] of [
      ["image-subtype", "4 0"],
      ["escaped-name", "4 0"],
      ["indirect-filter", "5 0"],
      ["hex-chain", "4 0"],
    ]) {
      expect(await findOversizedStream(fixture(`hostile/inflate-bomb-${file}.pdf`), 128 * MiB)).toEqual({
        object,
        limit: 128 * MiB,
      });
    }
    // (The scans' page images decode to 1.35 MB: every stream counts, images too.)
    for (const file of ["born-digital.pdf", "scanned.pdf", "mixed.pdf", "hostile/nested-forms.pdf"]) {
      expect(await findOversizedStream(fixture(file), 2 * MiB)).toBeNull();
    }
  });
});

describe("findPdfHazard: JPEG frames as pdf.js will decode them (issue 20, point 8)", () => {
  const limits = { maxStreamBytes: 128 * MiB, maxImagePixels: 50_000_000 };

  it("hostile/smuggled-jpeg.pdf: a dictionary saying 64×64 over a JPEG frame of 12000×12000", async () => {
    expect(await findPdfHazard(fixture("hostile/smuggled-jpeg.pdf"), limits)).toEqual({
      kind: "image",
      object: "5 0",
      width: 12_000,
      height: 12_000,
      limit: 50_000_000,
    });
  });

  it("the same JPEG as an inline image in a compressed content stream", async () => {
    const content = Buffer.concat([
      Buffer.from("q 100 0 0 100 0 0 cm BI /W 64 /H 64 /CS /RGB /BPC 8 /F /DCT ID ", "latin1"),
      Buffer.from(fixture("hostile/smuggled.jpg")),
      Buffer.from(" EI Q", "latin1"),
    ]);
    expect(await findPdfHazard(fileWith("/Filter /FlateDecode", deflateSync(content)), limits)).toMatchObject({
      kind: "image",
      object: "7 0",
      width: 12_000,
      inline: true,
    });
  });

  it("an honest JPEG passes, and the pixel limit is the one given", async () => {
    const jpeg = Buffer.from(fixture("paragraph.jpg"));
    const dict =
      "/Subtype /Image /Width 1500 /Height 300 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode";
    expect(await findPdfHazard(fileWith(dict, jpeg), limits)).toBeNull();
    expect(await findPdfHazard(fileWith(dict, jpeg), { ...limits, maxImagePixels: 400_000 })).toMatchObject({
      width: 1500,
      height: 300,
    });
  });

  it("an image declaring more pixels than the limit that is also an inflate bomb is named as an image", async () => {
    expect(await findPdfHazard(fixture("hostile/image-bomb.pdf"), limits)).toEqual({
      kind: "image",
      object: "5 0",
      width: 20_000,
      height: 20_000,
      limit: 50_000_000,
    });
  });
});

/** ASCII85 of `data` (no `z` shortcut), ending with `~>`. */
function ascii85(data: Buffer): Buffer {
  let out = "";
  for (let i = 0; i < data.length; i += 4) {
    const group = Buffer.alloc(4);
    data.copy(group, 0, i, i + 4);
    let value = group.readUInt32BE(0);
    const chars: string[] = [];
    for (let k = 0; k < 5; k++) {
      chars.unshift(String.fromCharCode(0x21 + (value % 85)));
      value = Math.floor(value / 85);
    }
    out += chars.slice(0, Math.min(4, data.length - i) + 1).join("");
  }
  return Buffer.from(`${out}~>`, "latin1");
}

/**
 * LZW codes (9 bits, EarlyChange 1) that keep extending one run of zeros: code n stands for n − 256 zeros, so output
 * grows with the square of the input. Clears the table before it would need 13-bit codes.
 */
function lzwRepeats(atLeast: number): Buffer {
  const codes: Array<[code: number, bits: number]> = [];
  let produced = 0;
  while (produced < atLeast) {
    codes.push([0, 9]);
    produced += 1;
    let width = 9;
    for (let code = 258; code < 4000 && produced < atLeast; code++) {
      codes.push([code, width]);
      produced += code - 256;
      if (code + 2 >= 1 << width) width++; // the decoder widens one code early (EarlyChange 1)
    }
    codes.push([256, width]);
  }
  codes.push([257, 9]);
  let bits = "";
  for (const [code, width] of codes) bits += code.toString(2).padStart(width, "0");
  bits = bits.padEnd(Math.ceil(bits.length / 8) * 8, "0");
  const out = Buffer.alloc(bits.length / 8);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(bits.slice(i * 8, i * 8 + 8), 2);
  return out;
}
