import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as jobsRoute from "@/app/api/ocr/jobs/route";
import * as jobRoute from "@/app/api/ocr/jobs/[id]/route";
import * as resultRoute from "@/app/api/ocr/jobs/[id]/result/route";
import * as processRoute from "@/app/api/ocr/process/route";
import { jobListSchema, jobResultSchema, jobViewSchema, type JobViewBody } from "@/lib/api/schemas";
import { listLedger } from "@/lib/credits";
import { JobRunner, readJobResult, resetWorkQueue } from "@/lib/jobs";
import { getEnv } from "@/lib/env";
import { getStore } from "@/lib/store";
import { characterErrorRate } from "@/bench/metrics";
import { PDFDocument } from "pdf-lib";
import { longScan } from "@/scripts/make-fixtures";
import {
  base64Of,
  createAccount,
  expectApiError,
  fixture,
  groundTruth,
  ocrRequest,
  setEnv,
  withStore,
  type TestAccount,
} from "../api/support";
import { createTestPool } from "../support/ocr";
import { ocrSettings, type OcrSettings } from "@/lib/ocr";
import { startTestRunner } from "../support/jobs";
import { services } from "@/lib/services";

/*
 * The job routes called in process (as Next calls them), on the memory store and on a real Redis (BullMQ), with an
 * engine pool and a job runner of the test's own.
 */

const BASE = "http://localhost:3000";
const ended = (view: JobViewBody) => !["queued", "running"].includes(view.status);

describe.each(["memory", "redis"] as const)("job routes (%s store)", (kind) => {
  withStore(kind);
  const pool = createTestPool();
  let runner: JobRunner;
  let scan: { pdf: Uint8Array; truth: string[] };

  /** The file's runner, with the engine's settings `ocr` (the constants unless a test gives its own). */
  const startRunner = (ocr?: OcrSettings) => (runner = startTestRunner(`test-${kind}`, pool, ocr));

  beforeAll(async () => {
    scan = await longScan(12);
    startRunner();
  }, 180_000);
  afterAll(async () => {
    await runner.stop();
    await resetWorkQueue();
    await pool.terminate();
  });

  const submit = (account: TestAccount, body: unknown, headers: Record<string, string> = {}) =>
    jobsRoute.POST(ocrRequest(body, { key: account.key, headers, url: `${BASE}/api/ocr/jobs` }));
  const get = (account: TestAccount, path: string) => {
    const url = `${BASE}${path}`;
    const route = new URL(url).pathname.endsWith("/result")
      ? resultRoute
      : new URL(url).pathname === "/api/ocr/jobs"
        ? jobsRoute
        : jobRoute;
    return route.GET(ocrRequest(undefined, { key: account.key, method: "GET", url }));
  };
  const cancel = (account: TestAccount, path: string) =>
    jobRoute.DELETE(ocrRequest(undefined, { key: account.key, method: "DELETE", url: `${BASE}${path}` }));

  async function accepted(response: Response): Promise<JobViewBody> {
    const text = await response.text();
    expect(response.status, text.slice(0, 300)).toBe(202);
    const view = jobViewSchema.strict().parse(JSON.parse(text));
    expect(response.headers.get("location")).toBe(view.links.self);
    return view;
  }

  async function waitEnded(account: TestAccount, view: JobViewBody): Promise<JobViewBody> {
    for (;;) {
      const response = await get(account, view.links.self);
      expect(response.status).toBe(200);
      const current = jobViewSchema.strict().parse(await response.json());
      if (ended(current)) {
        expect(response.headers.get("retry-after")).toBeNull();
        return current;
      }
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  it("submit → poll → result: the text of every page, the credits of every page, the ledger naming the job", async () => {
    const account = await createAccount(20);
    const view = await accepted(await submit(account, { image: Buffer.from(scan.pdf).toString("base64") }));
    expect(view).toMatchObject({ status: "queued", pageCount: 12, pagesTotal: 12, creditsReserved: 12, pagesDone: 0 });
    expect(await account.balance()).toBe(8);
    const final = await waitEnded(account, view);
    expect(final).toMatchObject({
      status: "succeeded",
      pagesDone: 12,
      pagesFailed: 0,
      creditsUsed: 12,
      creditsRefunded: 0,
      failedPages: [],
    });
    expect(await account.balance()).toBe(8);

    const response = await get(account, view.links.result);
    expect(response.status).toBe(200);
    expect(response.headers.get("link")).toBeNull();
    const result = jobResultSchema.strict().parse(await response.json());
    expect(result).toMatchObject({ status: "succeeded", format: "text", pages: "1-12", missingPages: [], next: null });
    expect(characterErrorRate(result.extractedText.split("\f").join("\n"), scan.truth.join("\n"))).toBeLessThan(0.03);

    const entries = (await listLedger(getStore(), account.userId, { limit: 10 })).entries.filter(
      (entry) => entry.requestId === view.jobId,
    );
    expect(entries.map((entry) => [entry.reason, entry.delta])).toEqual([["ocr", -12]]);
  }, 180_000);

  it("a multi-page TIFF as a job: each selected page a page task and a credit, read in order (issue 29 point 9)", async () => {
    const account = await createAccount(10);
    const tiff = fixture("tiff/three-pages.tif").toString("base64");
    const view = await accepted(await submit(account, { image: tiff, options: { pages: "1,3" } }));
    expect(view).toMatchObject({ pageCount: 3, pagesTotal: 2, creditsReserved: 2 });
    const final = await waitEnded(account, view);
    expect(final).toMatchObject({ status: "succeeded", pagesDone: 2, pagesFailed: 0, creditsUsed: 2 });
    expect(await account.balance()).toBe(8);
    const result = jobResultSchema.parse(await (await get(account, `${view.links.self}/result`)).json());
    const truths = groundTruth("tiff/three-pages.tif").trim().split("\n\n");
    const [first, third] = result.extractedText.split("\f");
    expect(characterErrorRate(first!, truths[0]!)).toBeLessThan(0.05);
    expect(characterErrorRate(third!, truths[2]!)).toBeLessThan(0.05);
  });

  it("Prefer: respond-async on /api/ocr/process answers 202 with the job; Idempotency-Key gives the same job", async () => {
    const account = await createAccount(20);
    const body = { image: base64Of("paragraph.png") };
    const headers = { prefer: "respond-async", "idempotency-key": `job-${Math.random()}` };
    const first = await processRoute.POST(ocrRequest(body, { key: account.key, headers }));
    expect(first.headers.get("preference-applied")).toBe("respond-async");
    const view = await accepted(first);
    const again = await processRoute.POST(ocrRequest(body, { key: account.key, headers }));
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await accepted(again)).jobId).toBe(view.jobId);
    const final = await waitEnded(account, view);
    expect(final).toMatchObject({ status: "succeeded", pagesDone: 1 });
    expect(await account.balance()).toBe(19);
    const result = jobResultSchema.parse(await (await get(account, view.links.result)).json());
    expect(characterErrorRate(result.extractedText, groundTruth("paragraph.png"))).toBeLessThan(0.05);
  }, 180_000);

  it("an imageUrl of this deployment's own sample is read from its files, as by the synchronous route", async () => {
    const account = await createAccount(20);
    const view = await accepted(
      await submit(account, { imageUrl: `${BASE}/samples/scan.pdf` }, { host: "localhost:3000" }),
    );
    expect(view.inputSource).toBe("url");
    const final = await waitEnded(account, view);
    expect(final.status).toBe("succeeded");
    const result = jobResultSchema.parse(await (await get(account, view.links.result)).json());
    expect(result.extractedText).toMatch(/invoice/i);
    // Another path of the same host is still refused (the SSRF guard).
    await expectApiError(
      await submit(account, { imageUrl: `${BASE}/api/health` }, { host: "localhost:3000" }),
      "invalid_request",
    );
  }, 180_000);

  it("a page that fails fails alone: the job succeeds with it listed and its credit refunded", async () => {
    const account = await createAccount(20);
    const view = await accepted(
      await submit(account, { image: Buffer.from(await pdfWithOneBadPage()).toString("base64") }),
    );
    const final = await waitEnded(account, view);
    expect(final).toMatchObject({
      status: "succeeded",
      pagesTotal: 3,
      pagesDone: 2,
      pagesFailed: 1,
      creditsUsed: 2,
      creditsRefunded: 1,
    });
    expect(final.failedPages).toEqual([
      { page: 2, code: "payload_too_large", message: expect.stringMatching(/megapixels/) },
    ]);
    expect(await account.balance()).toBe(18);
    const result = jobResultSchema.parse(await (await get(account, view.links.result)).json());
    expect(result.pages).toBe("1,3");
    expect(result.missingPages).toEqual([{ page: 2, status: "failed", code: "payload_too_large" }]);
    expect(characterErrorRate(result.extractedText.split("\f")[1]!, groundTruth("paragraph.png"))).toBeLessThan(0.05);
  }, 180_000);

  it("a page whose text layer takes unbounded work fails alone (too complex), the pages beside it are read", async () => {
    const account = await createAccount(20);
    const pdf = await mergedPdf(["born-digital.pdf", "hostile/nested-forms.pdf", "born-digital.pdf"]);
    // A runner whose engine budget per page is 1.5 s of processing (the constant is 10 s).
    await runner.stop();
    startRunner(ocrSettings({ maxPdfWorkMs: 1500 }));
    try {
      const view = await accepted(await submit(account, { image: Buffer.from(pdf).toString("base64") }));
      const final = await waitEnded(account, view);
      expect(final).toMatchObject({
        status: "succeeded",
        pagesTotal: 3,
        pagesDone: 2,
        pagesFailed: 1,
        creditsRefunded: 1,
      });
      expect(final.failedPages).toEqual([
        { page: 2, code: "payload_too_large", message: expect.stringMatching(/page 2 .* processing/) },
      ]);
    } finally {
      await runner.stop();
      startRunner();
    }
  }, 180_000);

  it("cancel: refunds what was not read; a second cancel and the status say cancelled", async () => {
    const account = await createAccount(20);
    const view = await accepted(await submit(account, { image: Buffer.from(scan.pdf).toString("base64") }));
    const response = await cancel(account, view.links.self);
    expect(response.status).toBe(200);
    const cancelled = jobViewSchema.parse(await response.json());
    expect(cancelled.status).toBe("cancelled");
    expect(cancelled.error).toEqual({ code: "cancelled", message: "Cancelled by the account" });
    expect(cancelled.creditsUsed + cancelled.creditsRefunded).toBe(12);
    expect(await account.balance()).toBe(20 - cancelled.creditsUsed);
    expect(jobViewSchema.parse(await (await cancel(account, view.links.self)).json())).toMatchObject({
      status: "cancelled",
      creditsUsed: cancelled.creditsUsed,
    });
  }, 180_000);

  it("402 before any work when the balance is short: nothing charged, no job", async () => {
    const account = await createAccount(5);
    await expectApiError(
      await submit(account, { image: Buffer.from(scan.pdf).toString("base64") }),
      "insufficient_credits",
      /needs 12 credits .* balance is 5/,
    );
    expect(await account.balance()).toBe(5);
    const list = jobListSchema.parse(await (await get(account, "/api/ocr/jobs")).json());
    expect(list.jobs).toEqual([]);
  });

  it("the same 4xx as /api/ocr/process: bad body, bad base64, unsupported type, unreadable, bad page list", async () => {
    const account = await createAccount(20);
    await expectApiError(await submit(account, {}), "invalid_request");
    await expectApiError(await submit(account, { image: "%%%" }), "invalid_request");
    await expectApiError(await submit(account, { image: base64Of("hostile/gif.gif") }), "unsupported_media_type");
    await expectApiError(await submit(account, { image: base64Of("hostile/truncated.pdf") }), "unreadable_document");
    await expectApiError(
      await submit(account, { image: base64Of("born-digital.pdf"), options: { pages: "9" } }),
      "invalid_request",
      /options\.pages/,
    );
    expect(await account.balance()).toBe(20);
  });

  it("a job past MAX_JOB_PAGES is 413; past the account's queued pages, 429", async () => {
    const account = await createAccount(100);
    let restore = setEnv({ MAX_JOB_PAGES: "5" });
    try {
      await expectApiError(
        await submit(account, { image: Buffer.from(scan.pdf).toString("base64") }),
        "payload_too_large",
        /at most 5/,
      );
    } finally {
      restore();
    }
    restore = setEnv({ MAX_QUEUED_PAGES_PER_ACCOUNT: "3" });
    try {
      const response = await submit(account, { image: Buffer.from(scan.pdf).toString("base64") });
      await expectApiError(response, "rate_limited", /at most 3 may wait/);
      expect(response.headers.get("retry-after")).toBe("60");
    } finally {
      restore();
    }
    expect(await account.balance()).toBe(100);
  });

  it("ids: malformed, unknown and another account's job are 404; pages outside the job are 400", async () => {
    const owner = await createAccount(20);
    const other = await createAccount(20);
    const view = await accepted(
      await submit(owner, { image: base64Of("born-digital.pdf"), options: { pages: "1-2" } }),
    );
    await expectApiError(await get(owner, "/api/ocr/jobs/not-a-job"), "not_found", /job ids look like/);
    await expectApiError(await get(owner, "/api/ocr/jobs/job_AAAAAAAAAAAAAAAAAAAAAA"), "not_found", /No job/);
    await expectApiError(await get(other, view.links.self), "not_found", /No job/);
    await expectApiError(await get(other, view.links.result), "not_found");
    await expectApiError(await cancel(other, view.links.self), "not_found");
    await waitEnded(owner, view);
    await expectApiError(
      await get(owner, `${view.links.result}?pages=3`),
      "invalid_request",
      /page 3 was not read by this job/,
    );
    await expectApiError(await get(owner, `${view.links.result}?pages=9`), "invalid_request", /pages:/);
    await expectApiError(await get(owner, `${view.links.result}?format=docx`), "invalid_request");
    await expectApiError(
      await get(owner, `${view.links.result}?format=pdf&pages=3`),
      "invalid_request",
      /page 3 was not read by this job/,
    );
    await expectApiError(await get(owner, `${view.links.result}?colour=red`), "invalid_request");
  }, 180_000);

  it("an expired job is 410 gone", async () => {
    const account = await createAccount(20);
    const view = await accepted(await submit(account, { image: Buffer.from(scan.pdf).toString("base64") }));
    // Ended with results that expire at once (JOB_RESULT_TTL is at least a minute).
    const now = new Date();
    const ended = await getStore().jobs.endJob(view.jobId, {
      end: "cancel",
      now: now.getTime(),
      resultTtlMs: 1,
      entry: { id: "led_expired_test", at: now.toISOString(), reason: "refund", requestId: view.jobId },
      day: now.toISOString().slice(0, 10),
    });
    expect(ended?.status).toBe("cancelled");
    await new Promise((resolve) => setTimeout(resolve, 5));
    await expectApiError(await get(account, view.links.self), "gone", /expired at/);
    await expectApiError(await get(account, view.links.result), "gone");
    await expectApiError(await cancel(account, view.links.self), "gone");
  }, 180_000);

  it("a result in parts: `next` chains cover every page once, in order", async () => {
    const account = await createAccount(20);
    const view = await accepted(
      await submit(account, { image: Buffer.from(scan.pdf).toString("base64"), options: { format: "json" } }),
    );
    await waitEnded(account, view);
    const seen: number[] = [];
    let pages: string | undefined;
    for (let parts = 0; ; parts++) {
      const part = await readJobResult(getStore(), getEnv(), services().deliveries, account.userId, view.jobId, {
        pages,
        limitBytes: 2_000,
      });
      const document = JSON.parse(part.extractedText) as { pages: Array<{ number: number; readBy: string }> };
      seen.push(...document.pages.map((page) => page.number));
      expect(document.pages.every((page) => page.readBy === `test-${kind}`)).toBe(true);
      if (!part.next) break;
      expect(parts).toBeLessThan(12);
      pages = new URL(part.next, BASE).searchParams.get("pages") ?? undefined;
    }
    expect(seen).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    // Through the route: Link names the same next part.
    const response = await get(account, `${view.links.result}?pages=1-3`);
    expect(response.headers.get("link")).toBeNull();
  }, 180_000);

  it("the account's jobs, newest first, in pages", async () => {
    const account = await createAccount(20);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (await accepted(await submit(account, { image: base64Of("born-digital.pdf"), options: { pages: "1" } }))).jobId,
      );
    const first = jobListSchema.parse(await (await get(account, "/api/ocr/jobs?limit=2")).json());
    expect(first.jobs.map((job) => job.jobId)).toEqual([ids[2], ids[1]]);
    expect(first.nextCursor).not.toBeNull();
    const second = jobListSchema.parse(
      await (await get(account, `/api/ocr/jobs?limit=2&cursor=${first.nextCursor}`)).json(),
    );
    expect(second.jobs.map((job) => job.jobId)).toEqual([ids[0]]);
    await expectApiError(await get(account, "/api/ocr/jobs?cursor=abc"), "invalid_request");
  }, 180_000);

  it("a born-digital PDF of many pages: read from its text layers in one step, no page task", async () => {
    const account = await createAccount(20);
    const view = await accepted(await submit(account, { image: base64Of("born-digital.pdf") }));
    const final = await waitEnded(account, view);
    expect(final).toMatchObject({ status: "succeeded", pagesDone: 3, creditsUsed: 3 });
    const result = jobResultSchema.parse(await (await get(account, `${view.links.result}?format=markdown`)).json());
    expect(result.extractedText).toContain("---");
  }, 180_000);
});

/** A PDF of the first page of each file. */
async function mergedPdf(files: string[]): Promise<Uint8Array> {
  const merged = await PDFDocument.create();
  for (const file of files) {
    const source = await PDFDocument.load(fixture(file));
    const [page] = await merged.copyPages(source, [0]);
    merged.addPage(page!);
  }
  return merged.save();
}

/** A PDF of a text page, a page drawing an image past the pixel limit, and a scanned page. */
function pdfWithOneBadPage(): Promise<Uint8Array> {
  return mergedPdf(["born-digital.pdf", "hostile/image-bomb-1bit.pdf", "scanned.pdf"]);
}
