import { spawn, type ChildProcess } from "node:child_process";
import { createCanvas } from "@napi-rs/canvas";
import { PDFDocument } from "pdf-lib";
import { afterAll, describe, expect, it } from "vitest";
import { getEnv } from "@/lib/env";
import { openDocument } from "@/lib/ocr";
import { pdfWorkBudgetMs } from "@/lib/ocr/documents";
import type { EngineProcess } from "@/lib/ocr/pool/engine-process";
import { OcrPool } from "@/lib/ocr/pool/pool";
import { expectOcrError } from "../support/ocr";

/*
 * Issue 39 point 6: the processor budget of opening a PDF (read.ts `pdfWorkBudgetMs`, watched from the pool) is the
 * document's own work — its inspect process's main thread, a second per MB of file over the base — so a normal scan
 * is not refused because the machine is busy; and a wall-time ceiling, much larger, still stops a process that does
 * not run at all.
 */

const pools: OcrPool[] = [];
const newPool = () => {
  const pool = new OcrPool({ size: 1, queueLimit: 16, maxJobsPerWorker: 50, createTimeoutMs: 60_000 });
  pools.push(pool);
  return pool;
};
afterAll(() => Promise.all(pools.map((pool) => pool.terminate())));

/** A scan as a copier makes one: each page one JPEG of a 200-DPI page of text, about 400 KB. */
async function scanPdf(pages: number): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  for (let n = 1; n <= pages; n++) {
    const canvas = createCanvas(1700, 2200);
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "#f4f1ea";
    ctx.fillRect(0, 0, 1700, 2200);
    ctx.fillStyle = "#222222";
    ctx.font = "32px sans-serif";
    for (let y = 200; y < 2100; y += 45)
      ctx.fillText(`Page ${n}, line ${y}: the quick brown fox jumps over the lazy dog ${(n * y).toString(36)}`, 150, y);
    const image = await pdf.embedJpg(canvas.toBuffer("image/jpeg", 60));
    pdf.addPage([612, 792]).drawImage(image, { x: 0, y: 0, width: 612, height: 792 });
  }
  return pdf.save();
}

/** Processes that spin on a core each until killed: a busy machine. */
function burners(count: number): ChildProcess[] {
  return Array.from({ length: count }, () => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
}

describe("the processor budget of opening a PDF (issue 39 point 6)", () => {
  it("grows with the file: a second per MB over the base", () => {
    expect(pdfWorkBudgetMs(new Uint8Array(10_900_000), 10_000)).toBe(20_900);
    expect(pdfWorkBudgetMs(new Uint8Array(3_000), 10_000)).toBeLessThan(10_010);
  });

  it(
    "a normal 8-page scan on a busy machine is opened (its inspection's own work counts, not the machine's)",
    { timeout: 240_000 },
    async () => {
      const bytes = await scanPdf(8);
      const pool = newPool();
      const busy = burners(2);
      try {
        // A base of 1 s (the default is 10 s): the scan's pages need ~0.2 s each of the inspect process's main thread,
        // which a budget of one second for the whole file (a second per 10 MB before) refused.
        const opened = await openDocument(bytes, {
          env: getEnv(),
          pool,
          fit: { by: Date.now() + 600_000 },
          deadline: Date.now() + 200_000,
          limits: { maxPdfWorkMs: 1_000 },
        });
        expect(opened.pageCount).toBe(8);
        await opened.close();
      } finally {
        for (const burner of busy) burner.kill("SIGKILL");
      }
      expect(pool.stats().stopped.work).toBe(0);
    },
  );

  it("an inspect process that stops running is stopped at the wall-time ceiling, not left to the deadline", async () => {
    const pool = newPool();
    const bytes = await scanPdf(1);
    const job = pool.run(
      "inspect",
      {
        kind: "inspect-pdf",
        doc: { id: "stalled", bytes },
        maxPages: 10,
        limits: { maxImagePixels: 50e6, maxStreamBytes: 100e6, maxWorkMs: 10_000 },
      },
      { deadline: Date.now() + 60_000, cpuBudgetMs: 30_000, wallBudgetMs: 1_500, overBudget: "over its budget" },
    );
    // The process the job runs on, stopped (SIGSTOP) as soon as it has the job: it uses no processor time from then.
    const processes = (pool as unknown as { processes: EngineProcess[] }).processes;
    let stalled: EngineProcess | undefined;
    while (!stalled) {
      stalled = processes.find((p) => p.lane === "inspect" && p.busy);
      if (!stalled) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    process.kill(stalled.pid!, "SIGSTOP");
    const started = Date.now();
    const error = await expectOcrError(job, "too_complex");
    expect(error.message).toBe("over its budget");
    // The deadline (60 s) did not end it.
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});
