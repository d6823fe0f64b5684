import { afterAll, describe, expect, it } from "vitest";
import { isApiError } from "@/lib/errors";
import { OcrPool, getOcrPool } from "@/lib/ocr";
import { processDocument } from "@/lib/process";
import { base64Of, callOcr, createAccount, expectApiError, expectLedgerConsistent, expectOcrOk, withStore } from "./support";

// This file's process-wide pool: one worker and room for one waiting job, so concurrent requests overflow it.
withStore("memory", { OCR_WORKERS: "1", OCR_QUEUE_LIMIT: "1" });
afterAll(() => getOcrPool().terminate());

describe("503 overloaded", () => {
  it("through the route: requests past the OCR queue get 503 with Retry-After and are not charged", async () => {
    const account = await createAccount(10);
    const image = base64Of("paragraph.png");
    const responses = await Promise.all(Array.from({ length: 6 }, () => callOcr({ image }, { key: account.key })));
    const ok = responses.filter((response) => response.status === 200);
    const overloaded = responses.filter((response) => response.status === 503);
    expect(ok.length + overloaded.length).toBe(6);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(overloaded.length).toBeGreaterThanOrEqual(1);
    for (const response of ok) await expectOcrOk(response);
    for (const response of overloaded) {
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
      await expectApiError(response, "overloaded", /queue is full/);
    }
    expect(await account.balance()).toBe(10 - ok.length);
    await expectLedgerConsistent(account);
  });

  it("processDocument with an injected pool (queue limit 1)", async () => {
    const account = await createAccount(10);
    const pool = new OcrPool({ size: 1, queueLimit: 1, maxJobsPerWorker: 100, createTimeoutMs: 30_000 });
    try {
      const outcomes = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          processDocument({
            body: { image: base64Of("small-text.png") },
            account,
            requestId: `req_overload_${i}_${Date.now()}`,
            pool,
          }).then(
            (result) => result.response.creditsUsed,
            (error: unknown) => (isApiError(error) ? error.code : String(error)),
          ),
        ),
      );
      expect(outcomes.filter((outcome) => outcome === 1).length).toBeGreaterThanOrEqual(1);
      expect(outcomes.filter((outcome) => outcome === "overloaded").length).toBeGreaterThanOrEqual(1);
      expect(outcomes.every((outcome) => outcome === 1 || outcome === "overloaded")).toBe(true);
      expect(await account.balance()).toBe(10 - outcomes.filter((outcome) => outcome === 1).length);
    } finally {
      await pool.terminate();
    }
  });
});
