import { errorLabel } from "@/lib/error-log";
import { apiCode } from "@/lib/api/errors";
import type { Env } from "@/lib/env";
import {
  fromLanguageSpec,
  inspectPages,
  readPage,
  type EngineDocument,
  type OcrPool,
  type OcrSettings,
} from "@/lib/ocr";
import { isOcrError, parsePageSelection, type LanguageChoice } from "@/lib/ocr/model";
import { isRedisConnectionError, type JobRecord, type JobStore, type Store } from "@/lib/store";
import type { DeliveryQueue } from "@/lib/webhooks";
import { endJob, jobPriority, pageFailure } from "./lifecycle";
import { decodePage, encodePage } from "./payload";
import type { LeasedTask, PageTask, PageTaskPage, TaskKind, WorkQueue } from "./queue/port";
import type { JobSettings } from "./settings";
import { SourceCache, jobDocId } from "./sources";
import { asError, describe, isTransient, PAGE_BOUND_CODES } from "./task-failures";

export interface RunnerOptions {
  queue: WorkQueue;
  settings: JobSettings;
  /** This process's name on the pages it reads. */
  name: string;
  /** The engine processes (the entry point's: lib/jobs/workers.ts, scripts/worker.ts). */
  pool: OcrPool;
  /** Where a job's end is announced (the entry point's delivery queue; none without TCP Redis). */
  deliveries: DeliveryQueue | null;
  /** The store whose jobs it works (the entry point's: lib/jobs/workers.ts, scripts/worker.ts). */
  store: Store;
  /** The languages installed (`OCR_LANGUAGES` of the configuration): what a page's `auto` may re-read it in. */
  languages: Env["OCR_LANGUAGES"];
  /** The engine's settings (limits, the work budget of a PDF page). Default: the constants (lib/ocr/model/settings.ts). */
  ocr?: OcrSettings;
}

/**
 * Works the job queue with this process's engine (lib/jobs/queue/port.ts): takes a page task only when an engine
 * process is free (`pool.capacity()`), and runs it in the background lane, so a synchronous request never waits
 * behind a job's pages; document tasks (text layers, fan-out, the end) one at a time.
 *
 * `start()` for a process that lives (every server instance, `npm run worker`); `drain()` for a serverless
 * invocation, which works until the queue is empty or its budget ends.
 */
export class JobRunner {
  private readonly pool: OcrPool;
  private readonly store: () => JobStore;
  private readonly sources: SourceCache;
  private stopping = false;
  /** Page tasks taken and not yet handed to the engine (their source is loading). */
  private starting = 0;
  private readonly running = new Set<Promise<void>>();
  private loops: Promise<void>[] = [];
  private wake?: () => void;
  private unsubscribe?: () => void;
  /** Set while draining: tasks stop being taken at it, and steps end by it. */
  private budgetEnd = Infinity;

  constructor(private readonly options: RunnerOptions) {
    this.pool = options.pool;
    this.store = () => options.store.jobs;
    this.sources = new SourceCache(this.store, options.settings.sourceCacheBytes);
  }

  start(): void {
    if (this.loops.length > 0) return;
    this.unsubscribe = this.pool.onCapacity(() => this.wake?.());
    void this.options.queue
      .watchStalled()
      .catch((error: unknown) => console.warn(`[jobs] stalled check failed to start (${errorLabel(error)})`));
    this.loops = [this.pageLoop(), this.documentLoop()];
  }

  /** Stop taking tasks and wait for the ones in hand (their locks would lapse otherwise, and others redo them). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    this.unsubscribe?.();
    await Promise.allSettled([...this.loops, ...this.running]);
  }

  /**
   * Work until nothing waits in either queue or `budgetMs` has passed, whichever first (a serverless invocation).
   * Returns the tasks it ran.
   */
  async drain(budgetMs: number): Promise<{ documents: number; pages: number }> {
    this.budgetEnd = Date.now() + budgetMs;
    const ran = { documents: 0, pages: 0 };
    await this.options.queue.watchStalled().catch(() => undefined);
    let idle = false;
    while (!idle && Date.now() < this.budgetEnd - this.options.settings.backoffMs) {
      idle = true;
      const document = await this.options.queue.take("document", { block: false });
      if (document) {
        idle = false;
        ran.documents++;
        await this.runDocument(document);
      }
      while (this.pool.capacity("ocr") - this.starting > 0 && Date.now() < this.budgetEnd - 1_000) {
        const page = await this.options.queue.take("page", { block: false });
        if (!page) break;
        idle = false;
        ran.pages++;
        this.track(this.runPage(page));
      }
      if (idle && this.running.size > 0) {
        idle = false;
        await Promise.race([...this.running, sleep(500)]);
      }
    }
    await Promise.allSettled(this.running);
    return ran;
  }

  private track(work: Promise<void>): void {
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
  }

  /** Take page tasks while an engine process is free, each run beside the others. */
  private pageLoop(): Promise<void> {
    return this.takeLoop(
      "page",
      async () => {
        if (this.pool.capacity("ocr") - this.starting > 0) return true;
        await this.waitForCapacity(1_000);
        return false;
      },
      (task) => this.track(this.runPage(task)),
    );
  }

  /** Take document tasks one at a time (the inspect lane is small). */
  private documentLoop(): Promise<void> {
    return this.takeLoop(
      "document",
      async () => true,
      (task) => this.runDocument(task),
    );
  }

  /**
   * Until `stop()`: when `ready` says so, wait a little for a task of `kind` and hand it over. A queue that cannot be
   * reached (Redis paused or restarting) is tried again with back-off, said once in the log.
   */
  private async takeLoop<K extends TaskKind>(
    kind: K,
    ready: () => Promise<boolean>,
    run: (task: LeasedTask<K>) => unknown,
  ): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      if (!(await ready())) continue;
      let task: LeasedTask<K> | null;
      try {
        task = await this.options.queue.take(kind, { block: true });
        failures = 0;
      } catch (error) {
        failures++;
        // A lost connection is said once by the store's link (lib/store/redis-link.ts).
        if (failures === 1 && !isRedisConnectionError(error))
          console.warn(`[jobs] taking a ${kind} task failed (${errorLabel(error)}); retrying`);
        await sleep(Math.min(10_000, 250 * 2 ** failures));
        continue;
      }
      if (task) await run(task);
    }
  }

  private waitForCapacity(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }

  // ─── documents ───

  private async runDocument(task: LeasedTask<"document">): Promise<void> {
    const { jobId } = task.data;
    try {
      if (task.gaveUp) {
        await this.endAsFailed(
          jobId,
          "internal_error",
          "The job's document step stopped too often (its engine processes died)",
        );
        await task.fail(new Error(task.gaveUp), false);
        return;
      }
      const record = await this.store().getJob(jobId);
      if (!record || (record.status !== "queued" && record.status !== "running")) {
        // Cancelled, failed or expired meanwhile: nothing left to do.
        this.forget(jobId);
        await task.complete();
        return;
      }
      switch (task.data.step) {
        case "open":
          await this.openDocument(task, record);
          return;
        case "rest":
          await this.fanOutRest(task, record);
          return;
        case "finish":
          await this.finishDocument(task, record);
          return;
      }
    } catch (error) {
      await this.documentFailed(task, error);
    }
  }

  /** Read the text layers (in chunks, resumable), store those pages, then fan out the pages that need OCR. */
  private async openDocument(task: LeasedTask<"document">, record: JobRecord): Promise<void> {
    const { settings } = this.options;
    await this.store().startJob(record.id, Date.now());
    const selected = parsePageSelection(record.selection, record.pageCount);
    if (record.fileType !== "pdf") {
      // An image is one page; a TIFF's selected pages have no text layer: all of them are read by OCR.
      await this.fanOut(
        task,
        record,
        selected.map((number) => ({ number })),
      );
      return;
    }
    const document = await this.sources.get(record);
    let inspected = task.data.inspected ?? 0;
    const found: PageTaskPage[] = [...(task.data.rest ?? [])];
    while (inspected < selected.length) {
      const chunk = selected.slice(inspected, inspected + settings.inspectChunk);
      const { done, ocr, failed } = await this.inspectChunk(document, record, chunk);
      const outcome = await this.store().storePages(
        record.id,
        done.map((page) => ({
          page: page.number,
          payload: encodePage({ page, language: { langs: [], auto: false }, readBy: this.options.name, ms: 0 }),
        })),
        Date.now(),
      );
      if (outcome.inactive) {
        // Cancelled or expired while its text layers were read.
        this.forget(record.id);
        await task.complete();
        return;
      }
      for (const { number, error } of failed) {
        const failure = describe(error);
        await this.store().failPage(record.id, number, pageFailure(failure.code, failure.message), Date.now());
      }
      found.push(...ocr.map(({ number, textLayer }) => ({ number, ...(textLayer && { textLayer }) })));
      inspected += chunk.length;
      if (inspected < selected.length && Date.now() > this.budgetEnd - settings.pageDeadlineMs / 2) {
        // This invocation's budget is nearly spent: the next one resumes from here.
        await task.update({ ...task.data, inspected, rest: found });
        await task.yield();
        return;
      }
    }
    await this.fanOut(task, record, found);
  }

  /**
   * Text layers of some pages. A chunk whose reading is stopped for its work or memory (one of its pages draws without
   * end) is read again page by page, so that only that page fails (with its code) and the others go on.
   */
  private async inspectChunk(
    document: EngineDocument,
    record: JobRecord,
    pages: number[],
  ): Promise<Awaited<ReturnType<typeof inspectPages>>> {
    const inspect = (chunk: number[]) =>
      inspectPages(document, {
        pages: chunk,
        deadline: Math.min(this.budgetEnd, Date.now() + this.options.settings.pageDeadlineMs),
        pool: this.pool,
        session: `job:${record.id}`,
        tenant: record.userId,
        ocr: this.options.ocr,
      });
    try {
      return await inspect(pages);
    } catch (error) {
      if (!isOcrError(error) || !PAGE_BOUND_CODES.has(error.code)) throw error;
      const merged: Awaited<ReturnType<typeof inspectPages>> = { done: [], ocr: [], failed: [] };
      for (const page of pages) {
        try {
          const one = pages.length > 1 ? await inspect([page]) : null;
          if (!one) throw error;
          merged.done.push(...one.done);
          merged.ocr.push(...one.ocr);
          merged.failed.push(...one.failed);
        } catch (pageError) {
          if (!isOcrError(pageError) || !PAGE_BOUND_CODES.has(pageError.code)) throw pageError;
          merged.failed.push({ number: page, error: pageError });
        }
      }
      return merged;
    }
  }

  /**
   * The pages that need OCR become page tasks. In `auto` language mode the first one goes alone: its reading decides
   * the language of the rest (as a request's first scanned page does).
   */
  private async fanOut(task: LeasedTask<"document">, record: JobRecord, pages: PageTaskPage[]): Promise<void> {
    const language = jobLanguage(record);
    const priority = jobPriority(record.pagesTotal);
    if (pages.length === 0) {
      await this.finishDocument(task, record);
      return;
    }
    const [first, ...rest] = pages;
    if (language.auto && rest.length > 0) {
      const parked = await task.waitForPages(
        [pageTask(record.id, first!, language)],
        { jobId: record.id, step: "rest", rest, first: first!.number },
        { priority },
      );
      if (!parked) await this.fanOutRest(task, record);
      return;
    }
    const parked = await task.waitForPages(
      pages.map((page) => pageTask(record.id, page, language)),
      { jobId: record.id, step: "finish" },
      { priority },
    );
    if (!parked) await this.finishDocument(task, record);
  }

  private async fanOutRest(task: LeasedTask<"document">, record: JobRecord): Promise<void> {
    const rest = task.data.rest ?? [];
    let language: LanguageChoice = jobLanguage(record);
    if (task.data.first !== undefined) {
      const [payload] = await this.store().getPages(record.id, [task.data.first]);
      // The first page's languages, unless it failed: then each page decides for itself.
      if (payload) language = decodePage(payload).language;
    }
    const parked = await task.waitForPages(
      rest.map((page) => pageTask(record.id, page, language)),
      { jobId: record.id, step: "finish" },
      { priority: jobPriority(record.pagesTotal) },
    );
    if (!parked) await this.finishDocument(task, record);
  }

  /** Every page task has ended: a page with neither a result nor a failure failed unseen; the job ends. */
  private async finishDocument(task: LeasedTask<"document">, record: JobRecord): Promise<void> {
    const store = this.store();
    const selected = parsePageSelection(record.selection, record.pageCount);
    const [done, failed] = await Promise.all([store.listDonePages(record.id), store.getFailedPages(record.id)]);
    const doneSet = new Set(done);
    for (const page of selected) {
      if (doneSet.has(page) || failed.has(page)) continue;
      await store.failPage(
        record.id,
        page,
        pageFailure("internal_error", "The page's task ended without a reading"),
        Date.now(),
      );
    }
    await endJob(this.options.store, this.options.deliveries, this.options.settings, record.id, "finish");
    this.forget(record.id);
    await task.complete();
  }

  /** A document step failed: the document itself is unreadable (the job fails, refunded), or try again later. */
  private async documentFailed(task: LeasedTask<"document">, error: unknown): Promise<void> {
    const { jobId } = task.data;
    const transient = isTransient(error);
    const lastAttempt = task.attemptsMade + 1 >= task.attempts;
    if (transient && !lastAttempt) {
      console.warn(`[jobs] ${jobId}: document step failed (${errorLabel(error, apiCode)}); it will be retried`);
      await task.fail(asError(error), true).catch(() => undefined);
      return;
    }
    const failure = describe(error);
    console.warn(`[jobs] ${jobId}: the job failed (${failure.code})`);
    await this.endAsFailed(jobId, failure.code, failure.message).catch((endError: unknown) =>
      console.error(
        `[jobs] ${jobId}: ending the failed job failed (${errorLabel(endError, apiCode)}); its reservation is swept at its deadline`,
      ),
    );
    this.forget(jobId);
    await task.fail(asError(error), false).catch(() => undefined);
  }

  private async endAsFailed(jobId: string, code: string, message: string): Promise<void> {
    await endJob(this.options.store, this.options.deliveries, this.options.settings, jobId, "fail", { code, message });
  }

  // ─── pages ───

  private async runPage(task: LeasedTask<"page">): Promise<void> {
    const { jobId, number } = task.data;
    const store = this.store();
    this.starting++;
    let handedOver = false;
    const handOver = () => {
      if (handedOver) return;
      handedOver = true;
      this.starting--;
    };
    try {
      if (task.gaveUp) {
        await store.failPage(
          jobId,
          number,
          pageFailure("internal_error", "The page stopped its engine processes too often"),
          Date.now(),
        );
        await task.fail(new Error(task.gaveUp), false);
        return;
      }
      const record = await store.getJob(jobId);
      if (!record || (record.status !== "queued" && record.status !== "running")) {
        this.forget(jobId);
        await task.complete();
        return;
      }
      const document = await this.sources.get(record);
      const started = Date.now();
      const reading = readPage(document, {
        page: { number, ...(task.data.textLayer && { textLayer: task.data.textLayer }) },
        language: task.data.language,
        background: true,
        deadline: Math.min(this.budgetEnd, started + this.options.settings.pageDeadlineMs),
        pool: this.pool,
        session: `job:${jobId}`,
        tenant: record.userId,
        languages: this.options.languages,
        ocr: this.options.ocr,
      });
      handOver(); // queued in the engine's background lane now: `pool.capacity()` counts it
      const result = await reading;
      const payload = encodePage({
        page: result.page,
        language: result.language,
        readBy: this.options.name,
        ms: Date.now() - started,
      });
      const outcome = await store.storePages(jobId, [{ page: number, payload }], Date.now());
      if (outcome.inactive) this.forget(jobId);
      await task.complete();
    } catch (error) {
      await this.pageFailed(task, error);
    } finally {
      handOver();
    }
  }

  private async pageFailed(task: LeasedTask<"page">, error: unknown): Promise<void> {
    const { jobId, number } = task.data;
    const lastAttempt = task.attemptsMade + 1 >= task.attempts;
    if (isTransient(error) && !lastAttempt) {
      await task.fail(asError(error), true).catch(() => undefined);
      return;
    }
    const failure = describe(error);
    try {
      await this.store().failPage(jobId, number, pageFailure(failure.code, failure.message), Date.now());
      await task.complete();
    } catch (storeError) {
      // The store is down: let the queue retry the task later (the page is read again, and charged once).
      console.warn(`[jobs] ${jobId}: recording page ${number}'s failure failed (${errorLabel(storeError, apiCode)})`);
      await task.fail(asError(storeError), true).catch(() => undefined);
    }
  }

  /** Let go of what this process keeps for a job that has ended (its file, the document held in the engine processes). */
  private forget(jobId: string): void {
    this.sources.drop(jobId);
    this.pool.release(jobDocId(jobId));
  }
}

export function pageTask(jobId: string, page: PageTaskPage, language: LanguageChoice): PageTask {
  return { jobId, language, ...page };
}

/** The job's language choice as its pages read it: checked when the job was accepted, kept as `languageSpec`. */
function jobLanguage(record: JobRecord): LanguageChoice {
  return fromLanguageSpec(record.language);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
