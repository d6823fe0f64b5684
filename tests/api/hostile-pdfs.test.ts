import { afterAll, describe, expect, it } from "vitest";
import { GET as health } from "@/app/api/health/route";
import { services } from "@/lib/services";
import { withEnv } from "../support/env";
import { callOcr, createAccount, expectApiError, expectLedgerConsistent, fixture, withStore } from "./support";

/*
 * The hostile PDFs (docs/decisions.md#hostile-pdfs; built by scripts/make-fixtures.ts) through the route handler on the real engine and a
 * real Redis: each ends in a catalogued error by its deadline, nothing is charged, and a health check sent meanwhile
 * is answered while the document is still being refused (the engine runs in child processes; this thread only routes).
 */
const DEADLINE_MS = 6_000;
withStore("redis", { REQUEST_DEADLINE_MS: String(DEADLINE_MS), OCR_ENGINE_PROCESSES: "2" });
afterAll(() => services().pool.terminate());

const cases = [
  {
    file: "hostile/image-bomb.pdf",
    status: 413,
    code: "payload_too_large",
    message: /an image of more than 50 megapixels/,
  },
  { file: "hostile/inflate-bomb.pdf", status: 413, code: "payload_too_large", message: /inflates to more than 128 MB/ },
  { file: "hostile/huge-pages.pdf", status: 504, code: "timeout", message: /deadline passed/ },
] as const;

describe("hostile PDFs through POST /api/ocr/process", () => {
  it.each(cases)("$file → $status $code by its deadline, nothing charged, health answers meanwhile", async (item) => {
    const account = await createAccount(100);
    const started = Date.now();
    let answeredAt = 0;
    const ocr = callOcr({ image: fixture(item.file).toString("base64") }, { key: account.key }).then((response) => {
      answeredAt = Date.now();
      return response;
    });
    // A health check while the document is in the engine: at once for the bombs (refused in well under a second),
    // two seconds in for the huge pages (36-megapixel renderings and OCR running in both engine processes).
    if (item.code === "timeout") await new Promise((resolve) => setTimeout(resolve, 2_000));
    const healthAnswer = await health(new Request("http://localhost:3000/api/health"));
    const healthAt = Date.now();
    expect(healthAnswer.status).toBe(200);
    const response = await ocr;
    await expectApiError(response, item.code, item.message);
    expect(response.status).toBe(item.status);
    // Stopped at its deadline, not left to run: the huge pages alone would keep both processes busy for minutes. A
    // ceiling, not a stopwatch: a busy machine may answer a few seconds late.
    expect(answeredAt - started).toBeLessThan(DEADLINE_MS + 20_000);
    if (item.code === "timeout") expect(healthAt).toBeLessThan(answeredAt);
    expect(await account.balance()).toBe(100);
    await expectLedgerConsistent(account);
  });

  it("afterwards the instance still reads documents (the stopped processes were replaced)", async () => {
    const account = await createAccount(5);
    // This file's short deadline is for the hostile files; the replaced processes start and read under the usual one,
    // which a busy machine needs.
    const response = await withEnv({ REQUEST_DEADLINE_MS: "55000" }, () =>
      callOcr({ image: fixture("paragraph.png").toString("base64") }, { key: account.key }),
    );
    expect(response.status).toBe(200);
    expect(await account.balance()).toBe(4);
  });
});
