import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { extractDocument, OcrPool, render, type PoolOptions } from "@/lib/ocr";
import { TEXTS } from "@/scripts/make-fixtures";
import { expectApiError, fixture } from "../support/ocr";

/*
 * The engine runs in child processes (lib/ocr/pool.ts): hostile documents end as catalogued errors, a job past its deadline
 * or its memory ceiling is stopped by killing its process, and a process that dies is replaced. The event loop of
 * this (the server's) process keeps turning meanwhile.
 */

const pools: OcrPool[] = [];
function newPool(options: Partial<PoolOptions> = {}): OcrPool {
  const pool = new OcrPool({ size: 1, queueLimit: 16, maxJobsPerWorker: 50, createTimeoutMs: 60_000, ...options });
  pools.push(pool);
  return pool;
}
afterAll(() => Promise.all(pools.map((pool) => pool.terminate())));

/** Counts timer ticks while `work` runs: the event loop was free if they kept coming. */
async function whileTicking<T>(work: Promise<T>): Promise<{ outcome: Promise<T>; ticks: number; longestGapMs: number }> {
  let ticks = 0;
  let last = performance.now();
  let longestGapMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longestGapMs = Math.max(longestGapMs, now - last);
    last = now;
    ticks++;
  }, 10);
  await work.catch(() => undefined);
  clearInterval(timer);
  return { outcome: work, ticks, longestGapMs };
}

const paragraphTruth = TEXTS.paragraph.join("\n");

describe("hostile PDFs", () => {
  const pool = newPool();

  it("image-bomb.pdf (one 20000×20000 image, 0.4 MB) → 413 naming the image limit, nothing decoded", async () => {
    const { outcome, ticks } = await whileTicking(extractDocument(fixture("hostile/image-bomb.pdf"), { pool }));
    const error = await expectApiError(outcome, "payload_too_large", 413);
    expect(error.message).toMatch(/Page 1 of the PDF draws an image of more than 50 megapixels/);
    expect(ticks).toBeGreaterThan(0);
    expect(pool.stats().stopped).toEqual({ timeout: 0, memory: 0, crashed: 0 });
  });

  it("inflate-bomb.pdf (a 1 MB content stream of 1 GiB) → 413 naming the stream limit, before pdf.js parses it", async () => {
    const error = await expectApiError(extractDocument(fixture("hostile/inflate-bomb.pdf"), { pool }), "payload_too_large", 413);
    expect(error.message).toMatch(/stream \(object 4 0\) that inflates to more than 128 MB/);
    expect(pool.stats().stopped.memory).toBe(0);
  });

  it("the stream limit is a setting: with 4 GiB allowed, the same file hits the process's memory ceiling instead (413)", async () => {
    const small = newPool({ memoryMb: 512 });
    const error = await expectApiError(
      extractDocument(fixture("hostile/inflate-bomb.pdf"), { pool: small, limits: { maxStreamBytes: 4 * 1024 ** 3 } }),
      "payload_too_large",
      413,
    );
    expect(error.message).toMatch(/more than 512 MB of memory/);
    expect(small.stats().stopped.memory).toBe(1);
    // The process was replaced: the pool reads on.
    const doc = await extractDocument(fixture("paragraph.png"), { pool: small });
    expect(characterErrorRate(render(doc, "text"), paragraphTruth)).toBeLessThan(0.02);
  });

  it("huge-pages.pdf (50 pages of 200×200 in, vector ink) → 504 at its deadline, this thread free meanwhile", async () => {
    const started = Date.now();
    const deadline = started + 5_000;
    // Ten pages: opening them takes well under the deadline, so it passes while a page is being read.
    const { outcome, longestGapMs } = await whileTicking(
      extractDocument(fixture("hostile/huge-pages.pdf"), { pool, deadline, pages: "1-10" }),
    );
    await expectApiError(outcome, "timeout", 504);
    expect(Date.now() - deadline).toBeLessThan(1_000);
    // Nothing of the 36-megapixel renderings ran on this thread.
    expect(longestGapMs).toBeLessThan(1_000);
  });

  it("afterwards the same pool reads a scan correctly", async () => {
    const doc = await extractDocument(fixture("scanned.pdf"), { pool });
    expect(characterErrorRate(render(doc, "text"), paragraphTruth)).toBeLessThan(0.02);
  });
});

describe("engine processes", () => {
  it("a job still running at its deadline is stopped: its process is killed (not abandoned) and replaced", async () => {
    const pool = newPool();
    await pool.warm();
    const [before] = pool.stats().processes.filter((p) => p.lane === "ocr");
    const deadline = Date.now() + 1_500;
    await expectApiError(extractDocument(fixture("dense-page.png"), { pool, deadline }), "timeout", 504);
    expect(Date.now() - deadline).toBeLessThan(1_000);
    expect(pool.stats().stopped.timeout).toBe(1);
    await waitFor(() => {
      try {
        process.kill(before!.pid, 0);
        return undefined;
      } catch {
        return true; // gone
      }
    }, 5_000);
    const doc = await extractDocument(fixture("paragraph.png"), { pool });
    expect(characterErrorRate(render(doc, "text"), paragraphTruth)).toBeLessThan(0.02);
    expect(pool.stats().processes.map((p) => p.pid)).not.toContain(before!.pid);
  });

  it("a process that dies during a job (SIGSEGV) → 500 for that job; a new one serves the next", async () => {
    const pool = newPool();
    await pool.warm();
    const running = extractDocument(fixture("dense-page.png"), { pool });
    const busy = await waitFor(() => pool.stats().processes.find((p) => p.lane === "ocr" && p.busy));
    process.kill(busy.pid, "SIGSEGV");
    await expectApiError(running, "internal_error", 500);
    expect(pool.stats().stopped.crashed).toBe(1);
    const doc = await extractDocument(fixture("paragraph.png"), { pool });
    expect(characterErrorRate(render(doc, "text"), paragraphTruth)).toBeLessThan(0.02);
    expect(pool.stats().processes.map((p) => p.pid)).not.toContain(busy.pid);
  });

  it("a process killed from outside (SIGKILL, far below its ceiling) → 500, not a 413 for memory", async () => {
    const pool = newPool();
    await pool.warm();
    const running = extractDocument(fixture("dense-page.png"), { pool });
    const busy = await waitFor(() => pool.stats().processes.find((p) => p.lane === "ocr" && p.busy));
    process.kill(busy.pid, "SIGKILL");
    await expectApiError(running, "internal_error", 500);
    expect(pool.stats().stopped).toMatchObject({ crashed: 1, memory: 0 });
  });

  it("a page over the memory ceiling → 413, its process killed and replaced", async () => {
    const pool = newPool({ memoryMb: 256 });
    const error = await expectApiError(
      extractDocument(fixture("hostile/huge-pages.pdf"), { pool, pages: "1", deadline: Date.now() + 30_000 }),
      "payload_too_large",
      413,
    );
    expect(error.message).toMatch(/more than 256 MB of memory for one page/);
    expect(pool.stats().stopped.memory).toBe(1);
  });

  it("waiting jobs are served round-robin by request: a long PDF does not hold up a single image behind it", async () => {
    const pool = newPool();
    await pool.warm();
    const order: string[] = [];
    const long = extractDocument(fixture("scanned-3.pdf"), { pool, language: "eng" }).then(() => order.push("pdf"));
    // Let the PDF's pages queue first.
    await waitFor(() => pool.stats().queued >= 1 || undefined);
    const image = extractDocument(fixture("small-text.png"), { pool }).then(() => order.push("image"));
    await Promise.all([long, image]);
    expect(order).toEqual(["image", "pdf"]);
  });

  it("a job that cannot start before its deadline is refused at once: 503 overloaded with Retry-After", async () => {
    const pool = newPool();
    await pool.warm();
    const busy = extractDocument(fixture("dense-page.png"), { pool });
    await waitFor(() => pool.stats().processes.find((p) => p.lane === "ocr" && p.busy));
    const refused = Date.now();
    const error = await expectApiError(
      extractDocument(fixture("paragraph.png"), { pool, deadline: Date.now() + 1_500 }),
      "overloaded",
      503,
    );
    expect(Date.now() - refused).toBeLessThan(500);
    expect(Number(error.headers["Retry-After"])).toBeGreaterThanOrEqual(1);
    await busy;
  });
});

async function waitFor<T>(check: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
