import { afterAll, describe, expect, it } from "vitest";
import { isApiError } from "@/lib/api/errors";
import { OcrPool } from "@/lib/ocr/pool/pool";
import { services } from "@/lib/services";
import { processDocument } from "@/lib/intake";
import {
  base64Of,
  callOcr,
  createAccount,
  expectApiError,
  expectLedgerConsistent,
  expectOcrOk,
  withStore,
} from "./support";
import { getStore } from "@/lib/store";
import { getEnv } from "@/lib/env";
import { testSettings, processRuntime } from "../support/env";

/*
 * Admission control: an instance knows its capacity (engine processes, and the work waiting for them in expected
 * seconds); a request that could not start before its deadline is refused at once with `503 overloaded` and a
 * `Retry-After`, instead of waiting to time out.
 */
const DEADLINE_MS = 6_000;
withStore("memory", { OCR_ENGINE_PROCESSES: "2", REQUEST_DEADLINE_MS: String(DEADLINE_MS) });
afterAll(() => services().pool.terminate());

describe("503 overloaded", () => {
  it("far past capacity at once: the surplus is refused at once (before any read is answered) with Retry-After; no 500; only answers are charged", async () => {
    // One read first, so the instance knows what a dense page costs (4–6 s: a few fit in a 6 s deadline). Its own
    // deadline is long: on a machine busy with other test files this one read alone may take more than 6 s.
    const warm = await createAccount(10);
    const warmed = await processDocument(getStore(), {
      ...processRuntime(),
      env: getEnv(),
      settings: testSettings(),
      body: { image: base64Of("dense-page.png") },
      account: warm,
      requestId: `req_overload_warm_${Date.now()}`,
      deadline: Date.now() + 170_000,
    });
    expect(warmed.response.creditsUsed).toBe(1);

    const accounts = await Promise.all(Array.from({ length: 12 }, () => createAccount(10)));
    const image = base64Of("dense-page.png");
    const started = Date.now();
    const outcomes = await Promise.all(
      accounts.map(async (account) => {
        const response = await callOcr({ image }, { key: account.key });
        return { account, response, ms: Date.now() - started };
      }),
    );
    const statuses = outcomes.map((outcome) => outcome.response.status);
    expect(statuses.every((status) => [200, 503, 504].includes(status))).toBe(true);
    const refused = outcomes.filter((outcome) => outcome.response.status === 503);
    expect(refused.length).toBeGreaterThanOrEqual(5);
    // "At once" as an order, not a clock: every refusal is answered before any read is (a read takes seconds; a
    // refusal waits for nothing), however busy the machine is.
    const firstRead = Math.min(
      ...outcomes.filter((outcome) => outcome.response.status !== 503).map((outcome) => outcome.ms),
    );
    for (const { response, ms } of refused) {
      expect(ms).toBeLessThan(firstRead);
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      await expectApiError(response, "overloaded", /busy|queue/);
    }
    for (const { account, response } of outcomes) {
      if (response.status === 200) await expectOcrOk(response);
      expect(await account.balance()).toBe(response.status === 200 ? 9 : 10);
      await expectLedgerConsistent(account);
    }
  });

  it("one account cannot fill an instance: past ACCOUNT_MAX_IN_FLIGHT (4) requests in flight, 429 with Retry-After", async () => {
    const account = await createAccount(20);
    const image = base64Of("small-text.png");
    const responses = await Promise.all(Array.from({ length: 8 }, () => callOcr({ image }, { key: account.key })));
    const ok = responses.filter((response) => response.status === 200);
    const limited = responses.filter((response) => response.status === 429);
    // The four in flight are answered, refused by the instance's admission control, or (on a busy machine) out of this
    // file's short deadline — never charged unless answered.
    expect(
      responses.filter((response) => response.status === 503 || response.status === 504).length +
        ok.length +
        limited.length,
    ).toBe(8);
    expect(limited.length).toBeGreaterThanOrEqual(3);
    for (const response of limited) {
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      await expectApiError(response, "rate_limited", /at most 4 OCR requests/);
    }
    expect(await account.balance()).toBe(20 - ok.length);
    await expectLedgerConsistent(account);
    // Another account is not affected meanwhile.
    const other = await createAccount(1);
    await expectOcrOk(await callOcr({ image }, { key: other.key }));
  });

  it("the job queue has a hard limit too (ocrSettings().queueLimit): past it 503 at once, nothing charged", async () => {
    const account = await createAccount(10);
    const pool = new OcrPool({ size: 1, queueLimit: 1, maxJobsPerWorker: 100, createTimeoutMs: 30_000 });
    try {
      const outcomes = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          processDocument(getStore(), {
            ...processRuntime(),
            env: getEnv(),
            settings: testSettings(),
            body: { image: base64Of("small-text.png") },
            account,
            requestId: `req_overload_${i}_${Date.now()}`,
            pool,
            deadline: Date.now() + 170_000,
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
