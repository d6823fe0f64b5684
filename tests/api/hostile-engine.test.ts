import path from "node:path";
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { GET as health } from "@/app/api/health/route";
import { services } from "@/lib/services";
import { SAMPLES } from "@/scripts/make-fixtures";
import {
  base64Of,
  callOcr,
  type CallOptions,
  createAccount,
  expectApiError,
  expectLedgerConsistent,
  expectOcrOk,
  withStore,
} from "./support";

/*
 * Hostile documents against the engine (issue 20, points 6, 8 and 9) through the route handler, on the real engine
 * processes and a real Redis, with the default 55-second deadline: each ends in its own catalogued error, not in a
 * timeout, nothing is charged, and other accounts' documents are read meanwhile. Opening a PDF may take 3 s of
 * processor time here (10 by default): on a machine shared with other test runs that is still well within the deadline.
 */
withStore("redis", { OCR_ENGINE_PROCESSES: "1" });
afterAll(() => services().pool.terminate());

/** The process route, as an instance whose PDF work budget is 3 s of processing (the constant is 10 s). */
const callHere = (body: unknown, options: CallOptions) =>
  callOcr(body, { ...options, settings: { ocr: { maxPdfWorkMs: 3000 } } });

const report = readFileSync(path.join(SAMPLES.dir, "report.pdf")).toString("base64");

describe("a PDF whose pages take unbounded work (32 nested forms, each drawing the next twice)", () => {
  it("is refused for its work (413), not at the deadline, while other accounts' PDFs and the deep health check are answered", async () => {
    const attacker = await createAccount(10);
    const others = [await createAccount(10), await createAccount(10)];
    const order: string[] = [];
    const hostile = callHere({ image: base64Of("hostile/nested-forms.pdf") }, { key: attacker.key }).then(
      (response) => {
        order.push("hostile");
        return response;
      },
    );
    await waitFor(() => services().pool.stats().inspect.busy > 0);

    // A 2-page born-digital PDF from two other accounts, and /api/health?deep=1 (which reads a PDF too), meanwhile.
    const reads = others.map((account, i) =>
      callHere({ image: report }, { key: account.key }).then((response) => {
        order.push(`other ${i}`);
        return response;
      }),
    );
    const checked = await health(new Request("http://localhost:3000/api/health?deep=1"));
    expect(checked.status).toBe(200);
    expect(await checked.json()).toMatchObject({ status: "ok" });
    for (const response of await Promise.all(reads)) {
      const body = await expectOcrOk(response);
      expect(body.extractedText).toContain("Annual Summary");
      expect(body.creditsUsed).toBe(2);
    }

    await expectApiError(await hostile, "payload_too_large", /Opening this PDF needs more than 3 s of processing/);
    expect(order.indexOf("hostile")).toBe(2); // answered after both other documents
    expect(await attacker.balance()).toBe(10);
    await expectLedgerConsistent(attacker);
  });
});

describe("a JPEG frame hidden behind a 64×64 one (point 8)", () => {
  it.each([["hostile/smuggled.jpg"], ["hostile/smuggled-jpeg.pdf"]])(
    "%s → 413 naming the 12000×12000 frame, nothing charged",
    async (file) => {
      const account = await createAccount(10);
      await expectApiError(
        await callHere({ image: base64Of(file) }, { key: account.key }),
        "payload_too_large",
        /12000×12000/,
      );
      expect(await account.balance()).toBe(10);
    },
  );
});

describe("inflate bombs spelled so the first pre-check missed them (point 9)", () => {
  it.each([
    ["hostile/inflate-bomb-image-subtype.pdf"],
    ["hostile/inflate-bomb-escaped-name.pdf"],
    ["hostile/inflate-bomb-indirect-filter.pdf"],
    ["hostile/inflate-bomb-hex-chain.pdf"],
  ])("%s → 413 from the stream limit (not the memory ceiling), nothing charged", async (file) => {
    const account = await createAccount(10);
    await expectApiError(
      await callHere({ image: base64Of(file) }, { key: account.key }),
      "payload_too_large",
      /inflates to more than 128 MB/,
    );
    expect(await account.balance()).toBe(10);
    expect(services().pool.stats().stopped.memory).toBe(0);
  });
});

async function waitFor(check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
