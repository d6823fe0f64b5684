import { afterAll, describe, expect, it } from "vitest";
import { TesseractPool } from "@/lib/ocr/engine/tesseract-pool";
import type { PoolOptions, RecognizeJob } from "@/lib/ocr/engine/tesseract-pool";
import { barsPgm, expectOcrError, fixture, ocrErrorOf } from "../support/ocr";

const BASE: PoolOptions = { size: 1, queueLimit: 16, maxJobsPerWorker: 50, createTimeoutMs: 60_000 };
const pools: TesseractPool[] = [];
function newPool(options: Partial<PoolOptions> = {}): TesseractPool {
  const pool = new TesseractPool({ ...BASE, ...options });
  pools.push(pool);
  return pool;
}
afterAll(() => Promise.all(pools.map((pool) => pool.terminate())));

const PARAGRAPH = fixture("paragraph.png");
/** About a second of recognition: long enough for a short deadline to pass while it runs. */
const SLOW = fixture("two-column.png");
const BARS = barsPgm();

function job(image: Uint8Array, deadline = Date.now() + 30_000): RecognizeJob {
  return {
    image,
    langs: ["eng"],
    params: { tessedit_pageseg_mode: "3", user_defined_dpi: "300", debug_file: "/dev/null" },
    deadline,
    pixels: 1,
  };
}

/** Tracks whether a promise has settled, without leaving a rejection unhandled. */
function track<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  return { promise, settled: () => done };
}

/** Tesseract's TSV: a page row first, word rows (level 5) with their text last. */
function words(tsv: string): string[] {
  return tsv
    .split("\n")
    .map((row) => row.split("\t"))
    .filter((cols) => cols[0] === "5" && cols.length >= 12)
    .map((cols) => cols[11]!.trim())
    .filter(Boolean);
}

describe("TesseractPool", () => {
  it("recognize returns Tesseract's TSV (a PGM built here, and a PNG)", async () => {
    const pool = newPool();
    const bars = await pool.recognize(job(BARS));
    expect(bars.split("\n")[0]).toBe("1\t1\t0\t0\t0\t0\t0\t0\t200\t60\t-1\t");
    const paragraph = await pool.recognize(job(PARAGRAPH));
    expect(words(paragraph).slice(0, 3)).toEqual(["Optical", "character", "recognition"]);
    expect(pool.stats()).toMatchObject({ size: 1, workers: 1, busy: 0, queued: 0, completed: 2 });
  });

  it("shed stops idle workers (their heaps go back) and the next job starts one again", async () => {
    const pool = newPool();
    await pool.recognize(job(BARS));
    expect(pool.stats()).toMatchObject({ workers: 1, busy: 0 });
    await pool.shed();
    expect(pool.stats()).toMatchObject({ workers: 0, busy: 0 });
    const paragraph = await pool.recognize(job(PARAGRAPH));
    expect(words(paragraph).slice(0, 3)).toEqual(["Optical", "character", "recognition"]);
    expect(pool.stats()).toMatchObject({ workers: 1, completed: 2 });
  });

  it("is lazy: no worker before the first job", () => {
    expect(newPool().stats()).toMatchObject({ size: 1, workers: 0, busy: 0, queued: 0, completed: 0 });
  });

  it("queue overflow → overloaded with a retry delay; the accepted jobs still finish", async () => {
    const pool = newPool({ queueLimit: 1 });
    await pool.warm();
    const running = pool.recognize(job(SLOW));
    const waiting = pool.recognize(job(BARS));
    expect(pool.stats()).toMatchObject({ busy: 1, queued: 1 });
    const error = await expectOcrError(pool.recognize(job(BARS)), "overloaded");
    expect(error.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(words(await running)).toContain("Apples");
    expect(typeof (await waiting)).toBe("string");
    expect(pool.stats()).toMatchObject({ queued: 0, completed: 2 });
  });

  it("a deadline already passed → deadline, without starting a worker", async () => {
    const pool = newPool();
    await expectOcrError(pool.recognize(job(BARS, Date.now() - 1)), "deadline");
    await expectOcrError(pool.recognize(job(BARS, Date.now())), "deadline");
    expect(pool.stats()).toMatchObject({ workers: 0, queued: 0 });
  });

  it("a deadline passing while the job waits in the queue → deadline; the running job and the next one are served", async () => {
    const pool = newPool();
    await pool.warm();
    const running = track(pool.recognize(job(SLOW)));
    const waiting = pool.recognize(job(BARS, Date.now() + 100));
    expect(pool.stats()).toMatchObject({ busy: 1, queued: 1 });
    await expectOcrError(waiting, "deadline");
    // It expired in the queue: the slow job is still running on the same worker.
    expect(running.settled()).toBe(false);
    expect(pool.stats()).toMatchObject({ workers: 1, busy: 1, queued: 0 });
    expect(words(await running.promise)).toContain("Apples");
    expect(words(await pool.recognize(job(PARAGRAPH)))).toContain("Optical");
    expect(pool.stats()).toMatchObject({ workers: 1, completed: 2 });
  });

  it("a running job past its deadline → deadline; its worker is replaced and the next job succeeds", async () => {
    const pool = newPool();
    await pool.warm();
    expect(pool.stats()).toMatchObject({ workers: 1, busy: 0 });
    const running = pool.recognize(job(SLOW, Date.now() + 50));
    expect(pool.stats()).toMatchObject({ busy: 1, queued: 0 }); // it is running, not waiting
    await expectOcrError(running, "deadline");
    // The worker that was busy with it is gone (a timed-out Tesseract cannot be interrupted, only dropped).
    expect(pool.stats()).toMatchObject({ workers: 0, busy: 0, completed: 0 });
    expect(words(await pool.recognize(job(PARAGRAPH)))).toContain("Optical");
    expect(pool.stats()).toMatchObject({ workers: 1, completed: 1 });
  });

  it("maxJobsPerWorker: 1 → every job gets a fresh worker, and all succeed", async () => {
    const pool = newPool({ maxJobsPerWorker: 1 });
    for (let i = 1; i <= 3; i++) {
      expect(words(await pool.recognize(job(PARAGRAPH)))).toContain("recognition");
      // Retired after its one job.
      expect(pool.stats()).toMatchObject({ workers: 0, completed: i });
    }
  });

  it("maxJobsPerWorker: 1 with jobs queued: they are served across the replacements", async () => {
    const pool = newPool({ maxJobsPerWorker: 1 });
    const results = await Promise.all([job(BARS), job(PARAGRAPH), job(BARS)].map((j) => pool.recognize(j)));
    expect(results.map((tsv) => typeof tsv)).toEqual(["string", "string", "string"]);
    expect(words(results[1]!)).toContain("Optical");
    expect(pool.stats()).toMatchObject({ completed: 3, queued: 0 });
  });

  it("terminate() rejects queued jobs; the running job settles too; later jobs are refused", async () => {
    const pool = newPool();
    await pool.warm();
    const running = track(pool.recognize(job(SLOW)));
    const queued = [track(pool.recognize(job(BARS))), track(pool.recognize(job(PARAGRAPH)))];
    expect(pool.stats()).toMatchObject({ busy: 1, queued: 2 });
    // Terminate in the very tick the job starts: tesseract.js is still loading its image and posts to the
    // worker afterwards; the pool must not let that become an unhandled rejection.
    await pool.terminate();
    for (const { promise } of queued) await expectOcrError(promise, "shutting_down");
    await ocrErrorOf(running.promise);
    expect(pool.stats()).toMatchObject({ workers: 0, queued: 0 });
    await expectOcrError(pool.recognize(job(BARS)), "shutting_down");
  });
});
