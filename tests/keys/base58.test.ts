import { describe, expect, it } from "vitest";
import { BASE58_PATTERN, encodeBase58 } from "@/lib/keys/base58";

const text = (value: string) => new TextEncoder().encode(value);
const hex = (value: string) => Uint8Array.from(Buffer.from(value, "hex"));

// Published Bitcoin-alphabet vectors: the base58 test cases of the IETF draft (draft-msporny-base58) and Bitcoin
// Core's src/test/data/base58_encode_decode.json.
const VECTORS: Array<[name: string, bytes: Uint8Array, encoded: string]> = [
  ["empty", new Uint8Array(), ""],
  ["one zero byte", hex("00"), "1"],
  ["ten zero bytes", hex("00000000000000000000"), "1111111111"],
  ['"Hello World!"', text("Hello World!"), "2NEpo7TZRRrLZSi2U"],
  [
    '"The quick brown fox jumps over the lazy dog."',
    text("The quick brown fox jumps over the lazy dog."),
    "USm3fpXnKG5EUBx2ndxBDMPVciP5hGey2Jh4NDv6gmeo1LkMeiKrLJUUBk6Z",
  ],
  ["0x0000287fb4cd (leading zeros)", hex("0000287fb4cd"), "11233QC4"],
  ["0x61", hex("61"), "2g"],
  ["0x626262", hex("626262"), "a3gV"],
  ["0x516b6fcd0f", hex("516b6fcd0f"), "ABnLTmg"],
  ["0xbf4f89001e670274dd", hex("bf4f89001e670274dd"), "3SEo3LWLoPntC"],
  ["0xecac89cad93923c02321", hex("ecac89cad93923c02321"), "EJDM8drfXA6uyA"],
  [
    "a Bitcoin address",
    hex("00eb15231dfceb60925886b67d065299925915aeb172c06647"),
    "1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L",
  ],
];

describe("encodeBase58 (the API keys' encoding)", () => {
  it.each(VECTORS)("%s", (_name, bytes, encoded) => {
    expect(encodeBase58(bytes)).toBe(encoded);
  });

  it("BASE58_PATTERN matches exactly the Bitcoin alphabet", () => {
    const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    const single = new RegExp(`^${BASE58_PATTERN}$`);
    const printable = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i));
    expect(printable.filter((char) => single.test(char)).join("")).toBe(alphabet);
  });
});
