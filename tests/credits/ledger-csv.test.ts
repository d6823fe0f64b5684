import { describe, expect, it } from "vitest";
import { LEDGER_CSV_HEADER, csvField, csvRow, ledgerCsvFields, ledgerCsvFilename } from "@/app/settings/ledger-csv";
import type { LedgerEntry } from "@/lib/credits";

describe("the ledger as CSV", () => {
  it("quotes fields with commas, quotes and line breaks (RFC 4180), rows end with CRLF", () => {
    expect(csvField("plain")).toBe("plain");
    expect(csvField("a,b")).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField("two\nlines")).toBe('"two\nlines"');
    expect(csvField("cr\rhere")).toBe('"cr\rhere"');
    expect(csvField(null)).toBe("");
    expect(csvField(undefined)).toBe("");
    expect(csvRow(["a", 1, null, "b,c"])).toBe('a,1,,"b,c"\r\n');
  });

  it("defuses text a spreadsheet would run as a formula, but not numbers", () => {
    expect(csvField('=HYPERLINK("http://evil")')).toBe('"\'=HYPERLINK(""http://evil"")"');
    expect(csvField("+1")).toBe("'+1");
    expect(csvField("-cmd")).toBe("'-cmd");
    expect(csvField("@SUM(A1)")).toBe("'@SUM(A1)");
    expect(csvField("\tx")).toBe("'\tx");
    expect(csvField(-3)).toBe("-3");
  });

  it("has one column per header field, in order, with the key's name", () => {
    const entry: LedgerEntry = {
      id: "led_1",
      at: "2026-11-23T10:00:00.000Z",
      delta: -2,
      balanceAfter: 98,
      reason: "ocr",
      requestId: "req_abc",
      keyId: "key_1",
      pages: 2,
      format: "markdown",
    };
    const fields = ledgerCsvFields(entry, new Map([["key_1", "CI, nightly"]]));
    expect(fields).toHaveLength(LEDGER_CSV_HEADER.length);
    expect(csvRow(fields)).toBe('2026-11-23T10:00:00.000Z,-2,98,ocr,req_abc,"CI, nightly",key_1,markdown,2\r\n');
    expect(csvRow(LEDGER_CSV_HEADER)).toBe(
      "time,change,balance_after,reason,request_id,key_name,key_id,format,pages\r\n",
    );
    const signup: LedgerEntry = {
      id: "led_0",
      at: "2026-11-23T09:00:00.000Z",
      delta: 100,
      balanceAfter: 100,
      reason: "signup",
    };
    expect(csvRow(ledgerCsvFields(signup, new Map()))).toBe("2026-11-23T09:00:00.000Z,100,100,signup,,,,,\r\n");
  });

  it("is named after the day, and the key when filtered", () => {
    const now = new Date("2026-11-23T23:59:00Z");
    expect(ledgerCsvFilename(now)).toBe("ocr-ledger-2026-11-23.csv");
    expect(ledgerCsvFilename(now, "key_abc")).toBe("ocr-ledger-key_abc-2026-11-23.csv");
  });
});
