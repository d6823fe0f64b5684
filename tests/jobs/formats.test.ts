import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PDFDocument } from "pdf-lib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as jobsRoute from "@/app/api/ocr/jobs/route";
import * as jobRoute from "@/app/api/ocr/jobs/[id]/route";
import * as resultRoute from "@/app/api/ocr/jobs/[id]/result/route";
import { jobResultSchema, jobViewSchema, type JobViewBody } from "@/lib/api/schemas";
import { JobRunner, resetWorkQueue } from "@/lib/jobs";
import { base64Of, createAccount, ocrRequest, withStore, type TestAccount } from "../api/support";
import { createTestPool } from "../support/ocr";
import { startTestRunner } from "../support/jobs";

/*
 * A job's result in the word-level formats and as a searchable PDF: GET /api/ocr/jobs/{id}/result?format=… called in
 * process, on the memory store, with an engine pool and a job runner of the test's own.
 */

const BASE = "http://localhost:3000";
const ALTO_XSD = path.resolve("tests/fixtures/alto/alto-4-4.xsd");

describe("job results in hocr, alto, tsv and pdf", () => {
  withStore("memory");
  const pool = createTestPool();
  let runner: JobRunner;
  const work = mkdtempSync(path.join(tmpdir(), "job-formats-"));

  beforeAll(() => {
    runner = startTestRunner("test-formats", pool);
  });
  afterAll(async () => {
    await runner.stop();
    await resetWorkQueue();
    await pool.terminate();
    rmSync(work, { recursive: true, force: true });
  });

  const get = (account: TestAccount, link: string) => {
    const url = `${BASE}${link}`;
    const route = new URL(url).pathname.endsWith("/result") ? resultRoute : jobRoute;
    return route.GET(ocrRequest(undefined, { key: account.key, method: "GET", url }));
  };

  async function runJob(account: TestAccount, body: unknown): Promise<JobViewBody> {
    const response = await jobsRoute.POST(ocrRequest(body, { key: account.key, url: `${BASE}/api/ocr/jobs` }));
    expect(response.status).toBe(202);
    let view = jobViewSchema.parse(await response.json());
    const deadline = Date.now() + 120_000;
    while (["queued", "running"].includes(view.status)) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 250));
      view = jobViewSchema.parse(await (await get(account, view.links.self)).json());
    }
    return view;
  }

  it("a job asked for pdf: its result streams application/pdf holding both pages, its text layer the job's text", async () => {
    const account = await createAccount(10);
    const view = await runJob(account, { image: base64Of("mixed.pdf"), options: { format: "pdf" } });
    expect(view).toMatchObject({ status: "succeeded", format: "pdf", pagesDone: 2 });

    // No format asked: the job's own (pdf).
    const response = await get(account, view.links.result);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/pdf");
    expect(response.headers.get("content-disposition")).toBe(`attachment; filename="${view.jobId}.pdf"`);
    expect(response.headers.get("x-pages")).toBe("1-2");
    const pdf = new Uint8Array(await response.arrayBuffer());
    expect(Number(response.headers.get("content-length"))).toBe(pdf.byteLength);
    const file = path.join(work, "job.pdf");
    writeFileSync(file, pdf);
    expect(spawnSync("qpdf", ["--check", file]).status).toBe(0);
    expect((await PDFDocument.load(pdf)).getPageCount()).toBe(2);

    // The same pages' text, from the job's page models: the PDF's text layer holds it.
    const text = jobResultSchema.parse(
      await (await get(account, `${view.links.result}?format=text`)).json(),
    ).extractedText;
    const words = (s: string) => s.split(/\s+/).filter(Boolean);
    expect(words(execFileSync("pdftotext", ["-raw", file, "-"], { encoding: "utf8" }))).toEqual(words(text));

    // One page of it.
    const page2 = await get(account, `${view.links.result}?format=pdf&pages=2`);
    expect(page2.headers.get("x-pages")).toBe("2");
    expect((await PDFDocument.load(new Uint8Array(await page2.arrayBuffer()))).getPageCount()).toBe(1);
  });

  it("the same job in hocr, alto and tsv (JSON parts, as text/json/markdown): ALTO valid, same words everywhere", async () => {
    const account = await createAccount(10);
    const view = await runJob(account, { image: base64Of("mixed.pdf") });
    const part = async (format: string) => {
      const response = await get(account, `${view.links.result}?format=${format}`);
      expect(response.status).toBe(200);
      return jobResultSchema.parse(await response.json());
    };
    const hocr = await part("hocr");
    const alto = await part("alto");
    const tsv = await part("tsv");
    expect(hocr).toMatchObject({ format: "hocr", pages: "1-2", next: null });
    const altoFile = path.join(work, "job.xml");
    writeFileSync(altoFile, alto.extractedText);
    const lint = spawnSync("xmllint", ["--noout", "--nonet", "--schema", ALTO_XSD, altoFile], { encoding: "utf8" });
    expect(lint.status, lint.stderr).toBe(0);
    const fromHocr = [...hocr.extractedText.matchAll(/class="ocrx_word"[^>]*>([^<]*)</g)].map((m) => m[1]);
    const fromAlto = [...alto.extractedText.matchAll(/CONTENT="([^"]*)"/g)].map((m) => m[1]);
    const fromTsv = tsv.extractedText
      .split("\n")
      .filter((line) => line.startsWith("5\t"))
      .map((line) => line.split("\t")[11]);
    expect(fromHocr.length).toBeGreaterThan(10);
    expect(fromAlto).toEqual(fromHocr);
    expect(fromTsv).toEqual(fromHocr);
    expect(hocr.extractedText.match(/class="ocr_page"/g)).toHaveLength(2);
  });
});
