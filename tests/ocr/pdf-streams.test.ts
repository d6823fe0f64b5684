import { deflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { findOversizedStream } from "@/lib/ocr/worker/pdf-streams";
import { fixture } from "../support/ocr";

/** A PDF-like file with one stream object: `dict` (without /Length unless given) and its data. */
function fileWith(dict: string, data: Buffer, { length = true, object = "7 0" } = {}): Uint8Array {
  const head = Buffer.from(`%PDF-1.7\n${object} obj\n<< ${dict}${length ? ` /Length ${data.length}` : ""} >>\nstream\n`, "latin1");
  const tail = Buffer.from("\nendstream\nendobj\n%%EOF\n", "latin1");
  return new Uint8Array(Buffer.concat([head, data, tail]));
}

const MiB = 1024 * 1024;
/** 16 MiB of spaces: ~16 KB deflated, so any limit under ~16 MB applies to it. */
const spaces = deflateSync(Buffer.alloc(16 * MiB, 0x20), { level: 9 });

describe("findOversizedStream", () => {
  it("finds a Flate stream that inflates past the limit, naming its object", async () => {
    expect(await findOversizedStream(fileWith("/Filter /FlateDecode", spaces), 8 * MiB)).toEqual({ object: "7 0", limit: 8 * MiB });
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

  it("skips images (pdf.js reads only their declared size), other filters and unfiltered streams", async () => {
    const limit = 8 * MiB;
    expect(await findOversizedStream(fileWith("/Subtype /Image /Width 10 /Height 10 /Filter /FlateDecode", spaces), limit)).toBeNull();
    expect(await findOversizedStream(fileWith("/Filter /DCTDecode", spaces), limit)).toBeNull();
    expect(await findOversizedStream(fileWith("", spaces), limit)).toBeNull();
  });

  it("corrupt or truncated Flate data is pdf.js's business, not a bomb", async () => {
    const garbage = Buffer.alloc(64 * 1024, 0xab);
    expect(await findOversizedStream(fileWith("/Filter /FlateDecode", garbage), 1024)).toBeNull();
    expect(await findOversizedStream(fileWith("/Filter /FlateDecode", spaces.subarray(0, spaces.length >> 1)), 32 * MiB)).toBeNull();
  });

  it("ignores `endstream` and text that merely says stream", async () => {
    const text = new Uint8Array(Buffer.from("%PDF-1.7\n% a comment about a stream\n1 0 obj (stream) endobj\nendstream\n", "latin1"));
    expect(await findOversizedStream(text, 1024)).toBeNull();
  });

  it("the generated fixtures: the inflate bomb is found, ordinary PDFs are not", async () => {
    expect(await findOversizedStream(fixture("hostile/inflate-bomb.pdf"), 128 * MiB)).toEqual({ object: "4 0", limit: 128 * MiB });
    for (const file of ["born-digital.pdf", "scanned.pdf", "mixed.pdf", "hostile/image-bomb.pdf"]) {
      expect(await findOversizedStream(fixture(file), 1 * MiB)).toBeNull();
    }
  });
});
