import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PDFDocument } from "pdf-lib";
import { getEnv } from "@/lib/env";
import { cancelJob, resetWorkQueue } from "@/lib/jobs";
import { services } from "@/lib/services";
import { getStore } from "@/lib/store";
import { callOcr, createAccount, expectApiError, expectOcrOk, fixture, setEnv, tinyPng, withStore } from "./support";

/*
 * Issue 39 item 5: a long scan sent to the synchronous route. `Prefer: respond-async, wait=N` (RFC 7240) reads it now
 * when its reading is expected to end within N seconds and answers `202` with a job otherwise — the decision MCP's
 * `extract_text` makes (the intake's `fit` mode); `Prefer: wait=N` alone narrows the read's deadline; a `504` names
 * the job routes. Charged as before: a read by its pages, a job by its pages reserved, a `504` nothing.
 */

withStore("redis");

/** A scanned PDF of `pages` small pages of one line each (cheap to inspect; seconds of OCR each to the duration model). */
async function lineScan(pages: number): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const image = await pdf.embedPng(tinyPng("Twelve pages", 720, 160));
  for (let n = 0; n < pages; n++) pdf.addPage([360, 120]).drawImage(image, { x: 36, y: 36, width: 288, height: 48 });
  return pdf.save();
}

/** A scanned PDF of `pages` pages, each the dense page (a full A4 of text: seconds of OCR each). */
async function denseScan(pages: number): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const image = await pdf.embedPng(new Uint8Array(fixture("dense-page.png")));
  for (let n = 0; n < pages; n++) pdf.addPage([612, 792]).drawImage(image, { x: 0, y: 0, width: 612, height: 792 });
  return pdf.save();
}

function rawPdf(bytes: Uint8Array, key: string, prefer?: string): Promise<Response> {
  return callOcr(undefined, {
    key,
    raw: bytes as BodyInit,
    headers: { "content-type": "application/pdf", ...(prefer && { prefer }) },
  });
}

describe("POST /api/ocr/process with Prefer: respond-async, wait=N", () => {
  beforeAll(async () => {
    await services().pool.warm();
  }, 60_000);
  afterAll(async () => {
    await resetWorkQueue();
    await services().pool.terminate();
  });

  it("a 12-page scan expected past the wait: 202 with the job at once, its pages reserved, not a 504 after 55 s", async () => {
    const account = await createAccount(20);
    const response = await rawPdf(await lineScan(12), account.key, "respond-async, wait=20");
    const text = await response.text();
    expect(response.status, text.slice(0, 300)).toBe(202);
    expect(response.headers.get("preference-applied")).toBe("respond-async");
    const view = JSON.parse(text) as { jobId: string; pagesTotal: number; creditsReserved: number; status: string };
    expect(view).toMatchObject({ pagesTotal: 12, creditsReserved: 12, status: "queued" });
    expect(response.headers.get("location")).toBe(`/api/ocr/jobs/${view.jobId}`);
    expect(response.headers.get("x-credits-remaining")).toBe("8");
    await cancelJob(getStore(), getEnv(), services(), account.userId, view.jobId);
    expect(await account.balance()).toBe(20);
  }, 60_000);

  it("a one-page scan that fits the wait is read now: 200 with the text, charged one credit", async () => {
    const account = await createAccount(5);
    const png = tinyPng("Read now 42", 720, 160);
    const response = await callOcr(
      { image: png.toString("base64") },
      { key: account.key, headers: { prefer: "respond-async, wait=30" } },
    );
    const body = await expectOcrOk(response);
    expect(response.headers.get("preference-applied")).toBeNull();
    expect(body.extractedText).toContain("Read now 42");
    expect(body.creditsUsed).toBe(1);
    expect(await account.balance()).toBe(4);
  }, 60_000);

  it("Prefer: respond-async without wait is a job whatever the document, as before", async () => {
    const account = await createAccount(5);
    const response = await callOcr(
      { image: tinyPng("A job anyway", 720, 160).toString("base64") },
      { key: account.key, headers: { prefer: "respond-async" } },
    );
    expect(response.status).toBe(202);
    const view = (await response.json()) as { jobId: string };
    await cancelJob(getStore(), getEnv(), services(), account.userId, view.jobId);
  }, 60_000);

  it("a webhook with wait is refused (400): whether it becomes a job is the service's choice", async () => {
    const account = await createAccount(5);
    const response = await callOcr(
      { image: tinyPng().toString("base64"), webhook: { url: "https://hooks.example/ocr" } },
      { key: account.key, headers: { prefer: "respond-async, wait=30" } },
    );
    await expectApiError(response, "invalid_request", /Prefer: respond-async without wait/);
    expect(await account.balance()).toBe(5);
  });

  it("Prefer: wait=N alone narrows the read's deadline: a 504 by then, naming the job routes, nothing charged", async () => {
    const account = await createAccount(20);
    const started = Date.now();
    const response = await rawPdf(await denseScan(12), account.key, "wait=5");
    const elapsed = Date.now() - started;
    await expectApiError(
      response,
      "timeout",
      /POST \/api\/ocr\/jobs.*Prefer: respond-async.*GET \/api\/ocr\/jobs\/\{id\}/,
    );
    // Answered by the wait (5 s) and the deadline's grace, far before the server's own 55 s.
    expect(elapsed).toBeLessThan(45_000);
    expect(await account.balance()).toBe(20);
  }, 90_000);

  it("the 504 of a read past REQUEST_DEADLINE_MS names the job routes; nothing charged", async () => {
    const restore = setEnv({ REQUEST_DEADLINE_MS: "3000" });
    try {
      const account = await createAccount(20);
      const response = await rawPdf(await denseScan(6), account.key);
      const body = await expectApiError(response, "timeout");
      expect(body.error.message).toMatch(
        /^The request deadline passed before the document was read\. Nothing was charged\./,
      );
      expect(body.error.message).toContain("POST /api/ocr/jobs");
      expect(body.error.message).toContain("Prefer: respond-async");
      expect(await account.balance()).toBe(20);
    } finally {
      restore();
    }
  }, 90_000);
});
