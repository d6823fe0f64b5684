import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { getEnv } from "@/lib/env";
import { http as mswHttp, HttpResponse, passthrough } from "msw";
import { PDFDocument } from "pdf-lib";
import { createClient } from "redis";
import * as jobsRoute from "@/app/api/ocr/jobs/route";
import * as processRoute from "@/app/api/ocr/process/route";
import { listLedger } from "@/lib/credits";
import { intake, type IntakeOutcome } from "@/lib/intake";
import { cancelJob, resetWorkQueue } from "@/lib/jobs";
import { type OcrPool } from "@/lib/ocr";
import { getStore } from "@/lib/store";
import { createTestPool } from "../support/ocr";
import {
  createAccount,
  expectApiError,
  fixture,
  ocrRequest,
  sleep,
  tinyPng,
  withRemoteFiles,
  withStore,
  type TestAccount,
} from "./support";
import { testSettings, processRuntime } from "../support/env";
import { services } from "@/lib/services";

/*
 * The one intake (lib/intake) on a real Redis with real engine processes: what it refuses before any byte is fetched,
 * the same PDF structure check for a read and a job, a long scan by URL that becomes a job, and a REST client that
 * goes away mid-read (a real HTTP server in front of the route, as Next runs it).
 */

withStore("redis");
const remote = withRemoteFiles();

/** Store keys whose names say they hold a job or its file. */
async function jobKeys(): Promise<string[]> {
  const prefix = getEnv().REDIS_PREFIX;
  const client = createClient({ url: process.env.REDIS_URL });
  await client.connect();
  try {
    const keys: string[] = [];
    for await (const batch of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 }))
      keys.push(...(Array.isArray(batch) ? batch : [batch]));
    // The work queue's own metadata (`bull:<queue>:meta`, written when the queue is first used) is no job's.
    return keys.filter(
      (key) => /job|src|source|chunk|bull/i.test(key.slice(prefix.length)) && !/bull:[a-z]+:meta$/.test(key),
    );
  } finally {
    await client.quit();
  }
}

/** A scanned PDF of `pages` pages drawing one embedded image each (embedded once: the file stays small, made in ms). */
async function scannedPdf(pages: number, png: Uint8Array, size: [number, number] = [612, 792]): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const image = await pdf.embedPng(png);
  for (let n = 0; n < pages; n++)
    pdf.addPage(size).drawImage(image, { x: 36, y: 36, width: size[0] - 72, height: size[1] - 72 });
  return pdf.save();
}

describe("the intake", () => {
  afterAll(async () => {
    await resetWorkQueue();
  });

  it("0 credits and a large URL: 402 before any byte is fetched, on every route and in MCP's mode; nothing stored", async () => {
    const account = await createAccount(0);
    let fetched = 0;
    remote.use(
      mswHttp.get("https://files.example/big.pdf", () => {
        fetched++;
        return new HttpResponse(new Uint8Array(40 * 1024 * 1024), { headers: { "content-type": "application/pdf" } });
      }),
    );
    const before = await jobKeys();
    const body = { imageUrl: "https://files.example/big.pdf" };
    await expectApiError(
      await jobsRoute.POST(ocrRequest(body, { key: account.key, url: "http://localhost:3000/api/ocr/jobs" })),
      "insufficient_credits",
    );
    await expectApiError(
      await processRoute.POST(ocrRequest(body, { key: account.key, headers: { prefer: "respond-async" } })),
      "insufficient_credits",
    );
    await expectApiError(await processRoute.POST(ocrRequest(body, { key: account.key })), "insufficient_credits");
    const fit = await intake(getStore(), {
      ...processRuntime(),
      env: getEnv(),
      settings: testSettings(),
      source: { kind: "url", url: body.imageUrl },
      account,
      requestId: "req_intake_402",
      mode: "fit",
    }).catch((error: unknown) => error);
    expect(fit).toMatchObject({ code: "insufficient_credits" });
    expect(fetched).toBe(0);
    expect(await jobKeys()).toEqual(before);
    expect((await getStore().jobs.listJobs(account.userId, { limit: 10, cursor: null })).jobs).toEqual([]);
    expect((await listLedger(getStore(), account.userId)).entries).toEqual([]);
  });

  describe("with an engine pool of its own", () => {
    let pool: OcrPool;
    beforeAll(async () => {
      pool = createTestPool();
      await pool.warm();
    });
    afterAll(() => pool.terminate());

    it("a PDF a job accepts passes a read's structure check too: one work budget, growing with the file", async () => {
      // A 12 MB PDF (one page of text, and an incompressible stream its structure check reads through) with a
      // 100 ms budget per document: both paths give it the same, growing with the file (since issue 39 point 6 the base
      // and a second per MB; the read path gave 100 ms before).
      const settings = testSettings({ ocr: { maxPdfWorkMs: 100 } });
      const pdf = await PDFDocument.create();
      const font = await pdf.embedFont("Helvetica");
      pdf.addPage([612, 792]).drawText("Budget grows with the file", { x: 72, y: 700, size: 24, font });
      const junk = new Uint8Array(12_000_000);
      for (let i = 0; i < junk.length; i += 65_536) crypto.getRandomValues(junk.subarray(i, i + 65_536));
      pdf.context.register(pdf.context.stream(junk));
      const bytes = await pdf.save();
      remote.use(
        mswHttp.get(
          "https://files.example/budget.pdf",
          () => new HttpResponse(bytes, { headers: { "content-type": "application/pdf" } }),
        ),
      );

      const budgets: number[] = [];
      const run = pool.run.bind(pool);
      const spy = vi.spyOn(pool, "run").mockImplementation(((lane, job, options) => {
        if (job.kind === "inspect-pdf") budgets.push(options.cpuBudgetMs ?? 0);
        return run(lane, job, options);
      }) as OcrPool["run"]);
      const account = await createAccount(10);
      const source = { kind: "url", url: "https://files.example/budget.pdf" } as const;
      try {
        const job = await intake(getStore(), {
          ...processRuntime(),
          env: getEnv(),
          settings,
          source,
          account,
          requestId: "req_budget_job",
          mode: "job",
          pool,
        });
        const read = await intake(getStore(), {
          ...processRuntime(),
          env: getEnv(),
          settings,
          source,
          account,
          requestId: "req_budget_read",
          mode: "read",
          pool,
        });
        expect(job.kind).toBe("job");
        expect(read.kind === "read" && read.result.response.extractedText).toContain("Budget grows with the file");
        if (job.kind === "job") await cancelJob(getStore(), getEnv(), services(), account.userId, job.view.jobId);
      } finally {
        spy.mockRestore();
      }
      expect(budgets).toHaveLength(2);
      expect(budgets[0]).toBe(budgets[1]);
      expect(budgets[0]).toBeGreaterThanOrEqual(1_200);
    }, 60_000);

    it("an 80-page scanned PDF by URL: the intake makes it a job (its work, not its page count), every page reserved", async () => {
      const bytes = await scannedPdf(80, tinyPng("Eighty pages of scan", 720, 160));
      let fetched = 0;
      remote.use(
        mswHttp.get("https://files.example/eighty.pdf", () => {
          fetched++;
          return new HttpResponse(bytes, { headers: { "content-type": "application/pdf" } });
        }),
      );
      const account = await createAccount(100);
      const outcome: IntakeOutcome = await intake(getStore(), {
        ...processRuntime(),
        env: getEnv(),
        settings: testSettings(),
        source: { kind: "url", url: "https://files.example/eighty.pdf" },
        account,
        requestId: "req_intake_80",
        mode: "fit",
        deadline: Date.now() + 28_000,
        pool,
      });
      expect(fetched).toBe(1);
      expect(outcome.kind).toBe("job");
      if (outcome.kind !== "job") return;
      expect(outcome.view).toMatchObject({ pageCount: 80, pagesTotal: 80, creditsReserved: 80, status: "queued" });
      expect(outcome.reason).toBe("it has more than 50 pages of OCR work, the most one call reads");
      expect(await account.balance()).toBe(20);
      await cancelJob(getStore(), getEnv(), services(), account.userId, outcome.view.jobId);
      expect(await account.balance()).toBe(100);
    }, 60_000);

    it("a 12-page scan that would not be read before the call's budget ends becomes a job by its expected time", async () => {
      const account = await createAccount(20);
      const bytes = await scannedPdf(12, tinyPng("Twelve pages", 720, 160), [360, 120]);
      const deadline = Date.now() + 4_000;
      const outcome = await intake(getStore(), {
        ...processRuntime(),
        env: getEnv(),
        settings: testSettings(),
        source: { kind: "bytes", bytes },
        account,
        requestId: "req_intake_12",
        mode: "fit",
        deadline,
        pool,
      });
      expect(outcome.kind).toBe("job");
      if (outcome.kind !== "job") return;
      expect(outcome.reason).toMatch(/^reading it is expected to take about \d+ s, and this call has \d+ s for it$/);
      expect(outcome.view).toMatchObject({ pagesTotal: 12, creditsReserved: 12 });
      await cancelJob(getStore(), getEnv(), services(), account.userId, outcome.view.jobId);
      expect(await account.balance()).toBe(20);
    }, 60_000);

    it("a short scan that fits the call is read now, in MCP's mode too", async () => {
      const account = await createAccount(5);
      const bytes = await scannedPdf(1, tinyPng("Read it now 42", 720, 160), [360, 120]);
      const outcome = await intake(getStore(), {
        ...processRuntime(),
        env: getEnv(),
        settings: testSettings(),
        source: { kind: "bytes", bytes, declaredBytes: bytes.byteLength },
        account,
        requestId: "req_intake_fit",
        mode: "fit",
        deadline: Date.now() + 28_000,
        pool,
      });
      expect(outcome.kind).toBe("read");
      if (outcome.kind !== "read") return;
      expect(outcome.result.response.extractedText).toContain("Read it now 42");
      expect(outcome.result.response).toMatchObject({ creditsUsed: 1, inputSource: "upload" });
      expect(await account.balance()).toBe(4);
    }, 60_000);
  });

  describe("a REST client that goes away mid-read (a real HTTP server in front of the route)", () => {
    let server: http.Server;
    let base: string;
    beforeAll(async () => {
      // As Next serves a route handler: the request's signal aborts when the connection closes before the answer
      // was written (next/dist/server/web/spec-extension/adapters/next-request.js).
      server = http.createServer((req, res) => {
        const controller = new AbortController();
        res.once("close", () => {
          if (!res.writableFinished) controller.abort(new Error("ResponseAborted"));
        });
        const chunks: Buffer[] = [];
        req.on("data", (chunk: Buffer) => chunks.push(chunk));
        req.on("end", () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(req.headers))
            if (typeof value === "string") headers.set(name, value);
          const request = new Request(`http://localhost${req.url}`, {
            method: req.method,
            headers,
            body: Buffer.concat(chunks),
            signal: controller.signal,
          });
          void processRoute.POST(request).then(async (response) => {
            res.writeHead(response.status, Object.fromEntries(response.headers));
            res.end(Buffer.from(await response.arrayBuffer()));
          });
        });
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      await services().pool.warm();
    }, 60_000);
    afterAll(async () => {
      server.close();
      await services().pool.terminate();
    });

    it("aborts the read: the engine work stops and every reserved page comes back", async () => {
      const account: TestAccount = await createAccount(10);
      const pdf = await scannedPdf(3, new Uint8Array(fixture("dense-page.png")));
      remote.use(mswHttp.post(`${base}/api/ocr/process`, () => passthrough()));
      const stoppedBefore = services().pool.stats().stopped.timeout;
      const client = new AbortController();
      const answer = fetch(`${base}/api/ocr/process`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": account.key },
        body: JSON.stringify({ image: Buffer.from(pdf).toString("base64") }),
        signal: client.signal,
      }).catch((error: unknown) => error);
      // Reserved (3 pages), and reading.
      for (let i = 0; (await account.balance()) === 10; i++) {
        expect(i, "the request never reserved its pages").toBeLessThan(300);
        await sleep(100);
      }
      expect(await account.balance()).toBe(7);
      await sleep(500);
      client.abort();
      expect(await answer).toBeInstanceOf(Error);
      for (let i = 0; (await account.balance()) !== 10; i++) {
        expect(i, "the reserved pages never came back").toBeLessThan(100);
        await sleep(100);
      }
      const { entries } = await listLedger(getStore(), account.userId);
      expect(entries.slice(0, 2).map((entry) => [entry.reason, entry.delta])).toEqual([
        ["refund", 3],
        ["ocr", -3],
      ]);
      // The engine work stopped (its process killed), long before the 55 s deadline.
      expect(services().pool.stats().stopped.timeout).toBeGreaterThan(stoppedBefore);
    }, 90_000);
  });
});
