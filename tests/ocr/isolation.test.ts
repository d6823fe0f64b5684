import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { extractDocument, openDocument, render } from "@/lib/ocr";
import { isOcrError, type OcrError } from "@/lib/ocr/model";
import { OcrPool, type PoolOptions } from "@/lib/ocr/pool/pool";
import { FIXTURE_DIR, handWrittenPdf, nestedFormsPdf, TEXTS } from "@/scripts/make-fixtures";
import { expectOcrError, fixture } from "../support/ocr";
import { getEnv } from "@/lib/env";

/*
 * The engine runs in child processes (lib/ocr/pool/pool.ts): hostile documents end as engine errors, a job past its deadline
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
/**
 * Counts timer ticks while `work` runs (the event loop was free if they kept coming), and the processor time this
 * process spent meanwhile: work done on this thread shows there whatever else the machine is doing, where a gap
 * between ticks could be another process's turn on a busy machine.
 */
async function whileTicking<T>(work: Promise<T>): Promise<{ outcome: Promise<T>; ticks: number; cpuMs: number }> {
  let ticks = 0;
  const cpuBefore = process.cpuUsage();
  const timer = setInterval(() => ticks++, 10);
  await work.catch(() => undefined);
  clearInterval(timer);
  const cpu = process.cpuUsage(cpuBefore);
  return { outcome: work, ticks, cpuMs: (cpu.user + cpu.system) / 1000 };
}

const paragraphTruth = TEXTS.paragraph.join("\n");

describe("hostile PDFs", () => {
  const pool = newPool();

  it("image-bomb.pdf (one 20000×20000 image, 0.4 MB) → image_too_large naming the image limit, nothing decoded", async () => {
    const { outcome, ticks } = await whileTicking(
      extractDocument(fixture("hostile/image-bomb.pdf"), { env: getEnv(), pool }),
    );
    const error = await expectOcrError(outcome, "image_too_large");
    expect(error.message).toMatch(
      /an image of more than 50 megapixels, the limit per image \(object 5 0\): it is 20000×20000 pixels/,
    );
    expect(ticks).toBeGreaterThan(0);
    expect(pool.stats().stopped).toEqual({ timeout: 0, work: 0, memory: 0, crashed: 0 });
  });

  it("image-bomb-1bit.pdf (20000×20000 at 1 bit, 50 MB inflated: under the stream limit) → pdf.js does not decode it: image_too_large for its page", async () => {
    const error = await expectOcrError(
      extractDocument(fixture("hostile/image-bomb-1bit.pdf"), { env: getEnv(), pool }),
      "image_too_large",
    );
    expect(error.message).toMatch(/Page 1 of the PDF draws an image of more than 50 megapixels/);
    expect(pool.stats().stopped).toEqual({ timeout: 0, work: 0, memory: 0, crashed: 0 });
  });

  it("inflate-bomb.pdf (a 1 MB content stream of 1 GiB) → stream_too_large naming the stream limit, before pdf.js parses it", async () => {
    const error = await expectOcrError(
      extractDocument(fixture("hostile/inflate-bomb.pdf"), { env: getEnv(), pool }),
      "stream_too_large",
    );
    expect(error.message).toMatch(/stream \(object 4 0\) that inflates to more than 128 MB/);
    expect(pool.stats().stopped.memory).toBe(0);
  });

  it("the stream limit is a setting: with 4 GiB allowed, the same file hits the process's memory ceiling instead (out_of_memory)", async () => {
    const small = newPool({ memoryMb: 512 });
    const error = await expectOcrError(
      extractDocument(fixture("hostile/inflate-bomb.pdf"), {
        env: getEnv(),
        pool: small,
        limits: { maxStreamBytes: 4 * 1024 ** 3 },
      }),
      "out_of_memory",
    );
    expect(error.message).toMatch(/more than 512 MB of memory/);
    expect(small.stats().stopped.memory).toBe(1);
    // The process was replaced: the pool reads on.
    const doc = await extractDocument(fixture("paragraph.png"), { env: getEnv(), pool: small });
    expect(characterErrorRate(render(doc, "text"), paragraphTruth)).toBeLessThan(0.02);
  });

  it("huge-pages.pdf (50 pages of 200×200 in, vector ink) → deadline, stopped at it, this thread free meanwhile", async () => {
    const started = Date.now();
    const deadline = started + 5_000;
    // Ten pages: opening them takes well under the deadline, so it passes while a page is being read.
    const { outcome, ticks, cpuMs } = await whileTicking(
      extractDocument(fixture("hostile/huge-pages.pdf"), { env: getEnv(), pool, deadline, pages: "1-10" }),
    );
    await expectOcrError(outcome, "deadline");
    // Nothing of the 36-megapixel renderings ran on this thread: one alone takes seconds of processor time.
    expect(ticks).toBeGreaterThan(0);
    expect(cpuMs).toBeLessThan(1_500);
  });

  it("afterwards the same pool reads a scan correctly", async () => {
    const doc = await extractDocument(fixture("scanned.pdf"), { env: getEnv(), pool });
    expect(characterErrorRate(render(doc, "text"), paragraphTruth)).toBeLessThan(0.02);
  });
});

// Issue 20, point 6: a page can be built to draw without end (32 forms each drawing the next twice: 2³² drawings
// from 6 KB). The work one PDF may do is bounded well below the deadline, and it does not hold up other PDFs.
describe("work bounds on PDFs", () => {
  const flat = (content: string) =>
    handWrittenPdf([
      "<< /Type /Catalog /Pages 2 0 R >>",
      "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
      `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    ]);
  // Long deadlines: the outcome asserted is the work limit's, never the deadline's, however busy the machine is.
  const long = () => Date.now() + 110_000;
  const slow = { timeout: 120_000 };

  it(
    "nested-forms.pdf (its text explodes) → too_complex: the inspect process is stopped at its processor-time budget, not at the deadline",
    slow,
    async () => {
      const pool = newPool();
      const error = await expectOcrError(
        extractDocument(fixture("hostile/nested-forms.pdf"), {
          env: getEnv(),
          pool,
          deadline: long(),
          limits: { maxPdfWorkMs: 2_000 },
        }),
        "too_complex",
      );
      expect(error.message).toMatch(/Opening this PDF needs more than 2 s of processing, the limit per document/);
      expect(pool.stats().stopped).toMatchObject({ work: 1, timeout: 0 });
    },
  );

  it("nested-forms-paths.pdf (no text; its blank-page check draws) → too_complex for its form nesting, at once", async () => {
    const pool = newPool();
    const error = await expectOcrError(
      extractDocument(fixture("hostile/nested-forms-paths.pdf"), { env: getEnv(), pool, deadline: long() }),
      "too_complex",
    );
    expect(error.message).toMatch(/Page 1 of the PDF nests forms more than 16 deep, the limit/);
    expect(pool.stats().stopped.work).toBe(0); // stopped inside the process, which reads on
  });

  it(
    "the same page with a little text (so it goes to OCR): drawing it at 300 DPI is bounded the same way",
    slow,
    async () => {
      const pool = newPool();
      const bytes = nestedFormsPdf({ leaf: "0 0 m 1 1 l S", pageText: "7" });
      const error = await expectOcrError(
        extractDocument(bytes, { env: getEnv(), pool, deadline: long() }),
        "too_complex",
      );
      expect(error.message).toMatch(/Page 1 of the PDF nests forms more than 16 deep/);
    },
  );

  it(
    "forms nested within the depth limit but drawn 4^10 times → too_complex for the processor time drawing takes",
    slow,
    async () => {
      const pool = newPool();
      const bytes = nestedFormsPdf({ levels: 10, fanOut: 4, leaf: "0 0 m 1 1 l S", pageText: "7" });
      const error = await expectOcrError(
        extractDocument(bytes, { env: getEnv(), pool, deadline: long(), limits: { maxPdfWorkMs: 2_000 } }),
        "too_complex",
      );
      expect(error.message).toMatch(/Page 1 of the PDF needs more than 2 s of processing to draw, the limit per page/);
    },
  );

  it(
    "a page of 1.2 million operations (600 KB of `q Q`, 3 KB compressed) → too_complex for its operations",
    slow,
    async () => {
      const pool = newPool();
      const error = await expectOcrError(
        extractDocument(flat("q Q ".repeat(600_000)), { env: getEnv(), pool, deadline: long() }),
        "too_complex",
      );
      expect(error.message).toMatch(/Page 1 of the PDF draws more than 1,000,000 operations, the limit per page/);
    },
  );

  it(
    "while one PDF holds an inspect process, another is opened by a second one (and admission counts the first as busy)",
    slow,
    async () => {
      const pool = newPool();
      const order: string[] = [];
      const hostile = extractDocument(fixture("hostile/nested-forms.pdf"), {
        env: getEnv(),
        pool,
        deadline: long(),
        limits: { maxPdfWorkMs: 1_500 },
      }).catch((error: unknown) => {
        order.push("hostile");
        return error;
      });
      await waitFor(() => pool.stats().inspect.busy > 0 || undefined);
      await new Promise((resolve) => setTimeout(resolve, 500)); // past its 150 ms estimate
      expect(pool.expectedWaitMs("inspect")).toBeGreaterThan(0); // (it was counted as done once past its estimate)
      const doc = await extractDocument(fixture("born-digital.pdf"), { env: getEnv(), pool });
      order.push("other");
      expect(doc.pages[0]!.source).toBe("text-layer");
      expect(pool.stats().inspect.workers).toBe(2);
      expect(isOcrError(await hostile) && ((await hostile) as OcrError).code).toBe("too_complex");
      expect(order).toEqual(["other", "hostile"]);
    },
  );

  it(
    "two PDFs at once on a cold inspect lane start both its processes (not the second after the first)",
    slow,
    async () => {
      const pool = newPool();
      const hostile = [1, 2].map(() =>
        extractDocument(fixture("hostile/nested-forms.pdf"), {
          env: getEnv(),
          pool,
          deadline: long(),
          limits: { maxPdfWorkMs: 3_000 },
        }).catch((error: unknown) => error),
      );
      await waitFor(() => pool.stats().inspect.busy >= 2 || undefined, 60_000);
      for (const outcome of hostile)
        expect(isOcrError(await outcome) && ((await outcome) as OcrError).code).toBe("too_complex");
    },
  );

  it(
    "one account's two nested-forms PDFs hold both inspect processes: another account's PDF is opened by a third at once, not after them",
    slow,
    async () => {
      const pool = newPool();
      await pool.warm({ ocr: 0 });
      const order: string[] = [];
      const hostile = [1, 2].map((n) =>
        extractDocument(fixture("hostile/nested-forms.pdf"), {
          env: getEnv(),
          pool,
          tenant: "attacker",
          deadline: long(),
          limits: { maxPdfWorkMs: 4_000 + n * 1_000 },
        }).catch((error: unknown) => {
          order.push(`hostile ${n}`);
          return error;
        }),
      );
      await waitFor(() => pool.stats().inspect.busy >= 2 || undefined);
      const doc = await extractDocument(fixture("born-digital.pdf"), { env: getEnv(), pool, tenant: "victim" });
      order.push("victim");
      expect(doc.pages[0]!.source).toBe("text-layer");
      // Before: the victim's PDF waited for the first of them to reach its work budget.
      for (const outcome of hostile)
        expect(isOcrError(await outcome) && ((await outcome) as OcrError).code).toBe("too_complex");
      expect(order).toEqual(["victim", "hostile 1", "hostile 2"]);
      // The process beyond the lane's size exits once nobody needs it.
      await waitFor(() => (pool.stats().processes.filter((p) => p.lane === "inspect").length <= 2 ? true : undefined));
    },
  );

  it(
    "a tenant already holding an inspect process does not get the second while another tenant's PDF waits",
    slow,
    async () => {
      const pool = newPool({ inspectSize: 2 });
      await pool.warm({ ocr: 0 });
      const order: string[] = [];
      const open = (name: string, tenant: string, file: string, maxPdfWorkMs?: number) =>
        extractDocument(fixture(file), {
          env: getEnv(),
          pool,
          tenant,
          deadline: long(),
          ...(maxPdfWorkMs && { limits: { maxPdfWorkMs } }),
        }).then(
          () => order.push(name),
          () => order.push(name),
        );
      // a holds one process for seconds and b the other; a's second PDF and then c's wait for the next free process.
      const a1 = open("a1", "a", "hostile/nested-forms.pdf", 6_000);
      const b1 = open("b1", "b", "hostile/nested-forms.pdf", 3_000);
      await waitFor(() => pool.stats().inspect.busy >= 2 || undefined);
      const a2 = open("a2", "a", "born-digital.pdf");
      await waitFor(() => pool.stats().inspect.queued >= 1 || undefined);
      const c1 = open("c1", "c", "born-digital.pdf");
      await Promise.all([a1, b1, a2, c1]);
      // Round-robin alone would give the process b frees to a's second PDF, which waited first.
      expect(order.indexOf("c1")).toBeLessThan(order.indexOf("a2"));
    },
  );

  it(
    "a PDF that cannot start before its deadline behind one being opened is refused at once (overloaded), not left to time out",
    slow,
    async () => {
      const pool = newPool({ inspectSize: 1 });
      const hostile = extractDocument(fixture("hostile/nested-forms.pdf"), {
        env: getEnv(),
        pool,
        deadline: long(),
        limits: { maxPdfWorkMs: 60_000 },
      }).catch((error: unknown) => error);
      await waitFor(() => pool.stats().inspect.busy > 0 || undefined);
      await new Promise((resolve) => setTimeout(resolve, 2_000)); // far past its 150 ms estimate
      const error = await expectOcrError(
        openDocument(fixture("born-digital.pdf"), { env: getEnv(), pool, deadline: Date.now() + 1_500 }),
        "overloaded",
      );
      expect(error.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      await pool.terminate();
      await hostile;
    },
  );
});

describe("engine processes", () => {
  it("a job still running at its deadline is stopped: its process is killed (not abandoned) and replaced", async () => {
    const pool = newPool();
    await pool.warm();
    const [before] = pool.stats().processes.filter((p) => p.lane === "ocr");
    const deadline = Date.now() + 1_500;
    await expectOcrError(extractDocument(fixture("dense-page.png"), { env: getEnv(), pool, deadline }), "deadline");
    expect(pool.stats().stopped.timeout).toBe(1);
    await waitFor(() => {
      try {
        process.kill(before!.pid, 0);
        return undefined;
      } catch {
        return true; // gone
      }
    }, 5_000);
    const doc = await extractDocument(fixture("paragraph.png"), { env: getEnv(), pool });
    expect(characterErrorRate(render(doc, "text"), paragraphTruth)).toBeLessThan(0.02);
    expect(pool.stats().processes.map((p) => p.pid)).not.toContain(before!.pid);
  });

  it("a process that dies during a job (SIGSEGV) → engine_crashed for that job; a new one serves the next", async () => {
    const pool = newPool();
    await pool.warm();
    const running = extractDocument(fixture("dense-page.png"), { env: getEnv(), pool });
    const busy = await waitFor(() => pool.stats().processes.find((p) => p.lane === "ocr" && p.busy));
    process.kill(busy.pid, "SIGSEGV");
    await expectOcrError(running, "engine_crashed");
    expect(pool.stats().stopped.crashed).toBe(1);
    const doc = await extractDocument(fixture("paragraph.png"), { env: getEnv(), pool });
    expect(characterErrorRate(render(doc, "text"), paragraphTruth)).toBeLessThan(0.02);
    expect(pool.stats().processes.map((p) => p.pid)).not.toContain(busy.pid);
  });

  it("a process killed from outside (SIGKILL, far below its ceiling) → engine_crashed, not out_of_memory", async () => {
    const pool = newPool();
    await pool.warm();
    const running = extractDocument(fixture("dense-page.png"), { env: getEnv(), pool });
    const busy = await waitFor(() => pool.stats().processes.find((p) => p.lane === "ocr" && p.busy));
    process.kill(busy.pid, "SIGKILL");
    await expectOcrError(running, "engine_crashed");
    expect(pool.stats().stopped).toMatchObject({ crashed: 1, memory: 0 });
  });

  it("a page over the memory ceiling → out_of_memory, its process killed and replaced", async () => {
    const pool = newPool({ memoryMb: 256 });
    const error = await expectOcrError(
      extractDocument(fixture("hostile/huge-pages.pdf"), {
        env: getEnv(),
        pool,
        pages: "1",
        deadline: Date.now() + 30_000,
      }),
      "out_of_memory",
    );
    expect(error.message).toMatch(/more than 256 MB of memory for one page/);
    expect(pool.stats().stopped.memory).toBe(1);
  });

  it("waiting jobs are served round-robin by request: a long PDF does not hold up a single image behind it", async () => {
    const pool = newPool();
    await pool.warm();
    const order: string[] = [];
    const long = extractDocument(fixture("scanned-3.pdf"), { env: getEnv(), pool, language: "eng" }).then(() =>
      order.push("pdf"),
    );
    // Let the PDF's pages queue first.
    await waitFor(() => pool.stats().queued >= 1 || undefined);
    const image = extractDocument(fixture("small-text.png"), { env: getEnv(), pool }).then(() => order.push("image"));
    await Promise.all([long, image]);
    expect(order).toEqual(["image", "pdf"]);
  });

  it("waiting jobs are served round-robin by tenant, then by request: one account's many images do not all go first", async () => {
    const pool = newPool();
    await pool.warm();
    const order: string[] = [];
    const read = (name: string, tenant: string) =>
      extractDocument(fixture("small-text.png"), { env: getEnv(), pool, tenant, language: "eng" }).then(() =>
        order.push(name),
      );
    const first = read("a1", "account-a");
    await waitFor(() => pool.stats().busy >= 1 || undefined);
    const rest = [read("a2", "account-a"), read("a3", "account-a"), read("a4", "account-a"), read("b1", "account-b")];
    await Promise.all([first, ...rest]);
    // Round-robin by request alone would give a1 a2 a3 a4 b1.
    expect(order.indexOf("b1")).toBeLessThan(order.indexOf("a4"));
    expect(order.indexOf("b1")).toBeLessThan(order.indexOf("a3"));
  });

  it("a job that cannot start before its deadline is refused at once: overloaded, with a retry delay", async () => {
    const pool = newPool();
    await pool.warm();
    let busyDone = false;
    const busy = extractDocument(fixture("dense-page.png"), { env: getEnv(), pool }).then(
      () => (busyDone = true),
      () => (busyDone = true),
    );
    await waitFor(() => pool.stats().processes.find((p) => p.lane === "ocr" && p.busy));
    // A second page queued behind it: its whole estimate is ahead of the next job, however long the first has run
    // (a running job past its estimate counts as ending — on a busy machine it may be past it by now).
    const queued = extractDocument(fixture("dense-page.png"), { env: getEnv(), pool }).catch(() => undefined);
    await waitFor(() => pool.stats().queued > 0 || undefined);
    const error = await expectOcrError(
      extractDocument(fixture("paragraph.png"), { env: getEnv(), pool, deadline: Date.now() + 1_500 }),
      "overloaded",
    );
    // "At once" as an order: refused while the page ahead of it is still being read, not when it is done.
    expect(busyDone).toBe(false);
    expect(error.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    // How the pages ahead end is not this test's (on a busy machine they may pass the default deadline).
    await pool.terminate();
    await Promise.all([busy, queued]);
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

describe("an engine process whose server dies", () => {
  /** A stand-in server: starts an engine process, gives it a PDF whose opening never ends, prints the process's pid. */
  const SERVER = `
const { fork } = require("node:child_process");
const { readFileSync } = require("node:fs");
const engine = fork(process.argv[1], [], {
  serialization: "advanced",
  stdio: ["ignore", "ignore", "ignore", "ipc"],
  env: { ...process.env, OCR_ENGINE_CONFIG: JSON.stringify({ maxJobsPerWorker: 50, createTimeoutMs: 60000, engines: ["tesseract"] }) },
});
engine.on("message", (message) => {
  if (message.type !== "ready") return;
  const limits = { maxImagePixels: 50e6, maxStreamBytes: 100e6, maxWorkMs: 600000 };
  const job = { kind: "inspect-pdf", doc: { id: "d1", bytes: new Uint8Array(readFileSync(process.argv[2])) }, maxPages: 50, limits };
  engine.send({ type: "job", id: 1, job, deadline: Date.now() + 600000 });
  setTimeout(() => console.log(engine.pid), 1000);
});`;

  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  it("busy opening a PDF that never ends (pdf.js never yields), it stops by itself instead of spinning on orphaned", async () => {
    const server = spawn(
      process.execPath,
      ["-e", SERVER, path.resolve("build/engine/ocr-worker.mjs"), path.join(FIXTURE_DIR, "hostile/nested-forms.pdf")],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    const pid = await new Promise<number>((resolve, reject) => {
      server.stdout.on("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
      server.on("exit", (code) => reject(new Error(`the stand-in server exited (${code}) before the job started`)));
    });
    try {
      expect(alive(pid)).toBe(true);
      server.kill("SIGKILL");
      // It was busy: without the watch it went on for many minutes (seen: 12, at 100% of a core).
      await expect.poll(() => alive(pid)).toBe(false);
    } finally {
      if (alive(pid)) process.kill(pid, "SIGKILL");
    }
  });
});
