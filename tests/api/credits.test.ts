import { describe, expect, it } from "vitest";
import { listLedger } from "@/lib/credits";
import { getStore } from "@/lib/store";
import {
  base64Of,
  callOcr,
  createAccount,
  expectApiError,
  expectLedgerConsistent,
  expectOcrOk,
  tinyPng,
  withStore,
} from "./support";

describe("credits through the route (redis store)", () => {
  // The race below is about the store; the per-account limit on requests in flight (tests/api/overload.test.ts)
  // would otherwise turn most of the 50 into 429s.
  withStore("redis", { ACCOUNT_MAX_IN_FLIGHT: "100" });

  it("50 concurrent requests on a 10-credit account: exactly 10 × 200 and 40 × 402, final balance 0", async () => {
    const account = await createAccount(10);
    const image = tinyPng("PAGE 7").toString("base64");
    const responses = await Promise.all(Array.from({ length: 50 }, () => callOcr({ image }, { key: account.key })));

    const ok = responses.filter((response) => response.status === 200);
    const refused = responses.filter((response) => response.status === 402);
    expect({ ok: ok.length, refused: refused.length }).toEqual({ ok: 10, refused: 40 });
    for (const response of ok) expect((await expectOcrOk(response)).creditsUsed).toBe(1);
    for (const response of refused)
      await expectApiError(response, "insufficient_credits", /needs 1 credit (\(1 page\)|or more \(1 per page\))/);

    expect(await account.balance()).toBe(0);
    await expectLedgerConsistent(account);
    const { entries } = await listLedger(getStore(), account.userId, { limit: 100 });
    expect(entries.filter((entry) => entry.reason === "ocr")).toHaveLength(10);
    expect(entries.filter((entry) => entry.reason === "refund")).toHaveLength(0);
  });

  it("a mixed PDF (one text page, one scanned page) charges 2; a failed request leaves ocr + refund entries that cancel out", async () => {
    const account = await createAccount(5);
    const body = await expectOcrOk(await callOcr({ image: base64Of("mixed.pdf") }, { key: account.key }));
    expect(body).toMatchObject({ creditsUsed: 2, pageCount: 2 });
    expect(body.confidence).toBeGreaterThan(80);
    expect(body.confidence).toBeLessThan(100);
    expect(await account.balance()).toBe(3);

    // Passes the cheap checks, fails while decoding: reserved, then refunded in full.
    await expectApiError(
      await callOcr({ image: base64Of("hostile/truncated.png") }, { key: account.key }),
      "unreadable_document",
    );
    expect(await account.balance()).toBe(3);
    const { entries } = await listLedger(getStore(), account.userId, { limit: 10 });
    expect(entries.slice(0, 2).map((entry) => [entry.reason, entry.delta])).toEqual([
      ["refund", 1],
      ["ocr", -1],
    ]);
    expect(entries[0]!.requestId).toBe(entries[1]!.requestId);
    expect(entries[0]!.keyId).toBe(account.keyId);
    await expectLedgerConsistent(account);
  });

  it("an account with no credits gets 402 for a single image, and the header says 0", async () => {
    const account = await createAccount(0);
    const response = await callOcr({ image: tinyPng().toString("base64") }, { key: account.key });
    await expectApiError(response, "insufficient_credits", /balance is 0/);
    expect(response.headers.get("x-credits-remaining")).toBe("0");
    expect(await account.balance()).toBe(0);
  });
});
