import { describe, expect, it } from "vitest";
import { ApiError } from "@/lib/api/errors";
import { decodeBase64Input } from "@/lib/input";

const MiB = 1024 * 1024;
const PNG_HEAD = Uint8Array.from([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0xfb, 0xff, 0xfe,
]);
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const b64url = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url");

function failure(run: () => unknown): ApiError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error("expected an ApiError, got a result");
}

/** Wraps at every `width` characters like MIME encoders do. */
function wrap(text: string, width: number, newline = "\n"): string {
  const lines: string[] = [];
  for (let i = 0; i < text.length; i += width) lines.push(text.slice(i, i + width));
  return lines.join(newline);
}

describe("decodeBase64Input: accepted forms", () => {
  // PNG_HEAD has 15 bytes, so its base64 is unpadded; one and two bytes fewer exercise both padding lengths.
  const bytes14 = PNG_HEAD.slice(0, 14);
  const bytes13 = PNG_HEAD.slice(0, 13);
  const cases: Array<[name: string, input: string, expected: Uint8Array]> = [
    ["plain base64", b64(PNG_HEAD), PNG_HEAD],
    ["plain base64, one padding char", b64(bytes14), bytes14],
    ["plain base64, two padding chars", b64(bytes13), bytes13],
    ["missing padding (one)", b64(bytes14).replace(/=+$/, ""), bytes14],
    ["missing padding (two)", b64(bytes13).replace(/=+$/, ""), bytes13],
    ["data URL", `data:image/png;base64,${b64(PNG_HEAD)}`, PNG_HEAD],
    ["data URL, declared type is ignored", `data:application/x-whatever;base64,${b64(PNG_HEAD)}`, PNG_HEAD],
    ["data URL with parameters, upper case", `DATA:image/png;name=scan.png;BASE64,${b64(bytes13)}`, bytes13],
    ["data URL without a type", `data:;base64,${b64(bytes14)}`, bytes14],
    ["leading and trailing whitespace", `\n  ${b64(PNG_HEAD)}  \r\n`, PNG_HEAD],
    ["whitespace before a data URL", ` \ndata:image/png;base64,${b64(PNG_HEAD)}`, PNG_HEAD],
    ["spaces and tabs inside", b64(PNG_HEAD).replace(/(.{3})/g, "$1 \t"), PNG_HEAD],
    ["whitespace between padding chars", `${b64(bytes13).slice(0, -2)}= =\n`, bytes13],
    ["URL-safe alphabet", b64url(PNG_HEAD), PNG_HEAD],
    ["URL-safe alphabet, unpadded", b64url(bytes13), bytes13],
    ["URL-safe alphabet in a data URL", `data:image/png;base64,${b64url(PNG_HEAD)}`, PNG_HEAD],
    ["single byte", "AA==", Uint8Array.of(0)],
    ["single byte, unpadded", "/w", Uint8Array.of(255)],
  ];

  it.each(cases)("%s", (_name, input, expected) => {
    const bytes = decodeBase64Input(input, MiB);
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(bytes)).toBe(false);
    expect([...bytes]).toEqual([...expected]);
  });

  it("the fixtures cover both alphabets", () => {
    expect(b64(PNG_HEAD)).toMatch(/[+/]/);
    expect(b64url(PNG_HEAD)).toMatch(/[-_]/);
  });

  it("decodes MIME-style base64 wrapped every 76 characters (LF and CRLF)", () => {
    const bytes = new Uint8Array(10_000).map((_, i) => (i * 7) % 256);
    const encoded = b64(bytes);
    expect([...decodeBase64Input(wrap(encoded, 76), MiB)]).toEqual([...bytes]);
    expect([...decodeBase64Input(`data:image/jpeg;base64,\r\n${wrap(encoded, 76, "\r\n")}\r\n`, MiB)]).toEqual([
      ...bytes,
    ]);
  });

  it("returns memory of its own, not a view into Buffer's shared pool", () => {
    const bytes = decodeBase64Input(b64(PNG_HEAD), MiB);
    expect(bytes.byteOffset).toBe(0);
    expect(bytes.buffer.byteLength).toBe(PNG_HEAD.length);
  });
});

describe("decodeBase64Input: invalid input is 400 invalid_request", () => {
  const cases: Array<[name: string, input: string]> = [
    ["empty string", ""],
    ["whitespace only", " \n\t "],
    ["empty data URL", "data:image/png;base64,"],
    ["data URL without ;base64", `data:image/png,${b64(PNG_HEAD)}`],
    ["data URL without a comma", "data:image/png;base64"],
    ["invalid character", `${b64(PNG_HEAD).slice(0, 8)}*${b64(PNG_HEAD).slice(8)}`],
    ["non-ASCII character", `${b64(PNG_HEAD)}é`],
    ["a dot", "AAAA.AAA"],
    ["percent-encoding", "AA%3D%3D"],
    ["impossible length (4n + 1)", "AAAAA"],
    ["impossible length, single char", "A"],
    ["data after padding", "AA==AA=="],
    ["too much padding", "AA==="],
    ["padding on a full quantum", "AAAA="],
    ["wrong padding length", "AAA=="],
    ["padding only", "=="],
    ["JSON instead of base64", '{"image": "x"}'],
  ];

  it.each(cases)("%s", (_name, input) => {
    const error = failure(() => decodeBase64Input(input, MiB));
    expect(error.code).toBe("invalid_request");
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/^image(: a data URL must be base64| is not valid base64)/);
  });
});

describe("decodeBase64Input: size limit", () => {
  const limit = 3 * MiB;

  it.each([
    ["exactly at the limit", limit, false],
    ["one byte under the limit", limit - 1, false],
    ["one byte over the limit", limit + 1, true],
    ["two bytes over the limit", limit + 2, true],
    ["three bytes over the limit", limit + 3, true],
  ] as const)("%s", (_name, size, tooLarge) => {
    const encoded = b64(new Uint8Array(size).fill(0xab));
    if (!tooLarge) {
      expect(decodeBase64Input(encoded, limit).length).toBe(size);
      expect(decodeBase64Input(encoded.replace(/=+$/, ""), limit).length).toBe(size);
      return;
    }
    const error = failure(() => decodeBase64Input(encoded, limit));
    expect(error.code).toBe("payload_too_large");
    expect(error.status).toBe(413);
    expect(error.message).toContain("3 MB");
    expect(error.message).toContain("imageUrl");
  });

  it("does not count whitespace or padding toward the limit", () => {
    const bytes = new Uint8Array(1000).fill(1); // 1336 characters, two of them padding
    const encoded = wrap(b64(bytes), 10, "\r\n");
    expect(decodeBase64Input(`data:image/png;base64,${encoded}`, 1000).length).toBe(1000);
    expect(failure(() => decodeBase64Input(encoded, 999)).code).toBe("payload_too_large");
  });

  it("names a fractional limit in MB", () => {
    const error = failure(() => decodeBase64Input(b64(new Uint8Array(2 * MiB)), 1.5 * MiB));
    expect(error.message).toContain("1.5 MB");
  });

  it("rejects an oversized payload without decoding it", () => {
    const from = Buffer.from;
    let decodeCalls = 0;
    Buffer.from = ((...args: Parameters<typeof Buffer.from>) => {
      decodeCalls++;
      return from(...args);
    }) as typeof Buffer.from;
    try {
      const encoded = "A".repeat(4 * MiB + 4);
      expect(failure(() => decodeBase64Input(encoded, limit)).code).toBe("payload_too_large");
    } finally {
      Buffer.from = from;
    }
    expect(decodeCalls).toBe(0);
  });

  // Speed is the bench's business; these only check that a large input is handled correctly.
  it("decodes a ~4 MB data URL wrapped at 76 columns", () => {
    const bytes = new Uint8Array(3 * MiB).map((_, i) => (i * 31) % 256);
    const encoded = `data:image/png;base64,${wrap(b64(bytes), 76)}`;
    expect(encoded.length).toBeGreaterThan(4 * 1000 * 1000);
    const decoded = decodeBase64Input(encoded, limit);
    expect(decoded.length).toBe(bytes.length);
    expect(Buffer.from(decoded).equals(Buffer.from(bytes))).toBe(true);
  });

  it("rejects a ~4 MB string with a bad character at the end", () => {
    const encoded = `${"QUJD".repeat(MiB)}!`;
    expect(failure(() => decodeBase64Input(encoded, 8 * MiB)).code).toBe("invalid_request");
  });
});
