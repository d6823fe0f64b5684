import type { ExtractedPage, LanguageChoice } from "@/lib/ocr/model";

/**
 * The work of asynchronous jobs, as tasks on a queue: one document task per job, which fans out one page task per
 * page that needs OCR and waits for them (BullMQ's parent and children), then ends the job. Any process with a free
 * engine process takes the next page task of any job. The queue owns locks, stalled-task recovery, retries with
 * back-off and the parent's wake-up; the job's own state (pages, credits, status) is in the store (lib/store/jobs).
 *
 * Two adapters: BullMQ on Redis (every instance and `npm run worker` share it) and one in memory for the embedded
 * development default, with the same contract for one process.
 */

/** How the queue holds and retries tasks: part of the jobs' settings (lib/jobs/settings.ts `JobSettings`). */
export interface TaskSettings {
  /** How long a taken task stays locked without its lock being extended (its process died: stalled after it). */
  lockMs: number;
  /** How often stalled tasks are looked for. */
  stalledIntervalMs: number;
  /** Stalls a task survives (its process died holding it) before it fails (its page is refunded). */
  maxStalls: number;
  /** Attempts of a page whose engine process crashed or could not start, with exponential back-off from `backoffMs`. */
  pageAttempts: number;
  backoffMs: number;
  /** How long a blocking take waits for a task (s). */
  blockSeconds: number;
}

/** A document task's step: `open` (text layers, fan-out), `rest` (fan out the pages after the first), `finish`. */
export type DocumentStep = "open" | "rest" | "finish";

export interface DocumentTask {
  jobId: string;
  step: DocumentStep;
  /** `open`: how many selected pages were inspected so far (a step that stopped early resumes there). */
  inspected?: number;
  /** `rest`: the OCR pages after the first, which waits alone so it can decide the language of the rest. */
  rest?: PageTaskPage[];
  /** `rest`: the first OCR page (its reading says the language of the rest). */
  first?: number;
}

export interface PageTaskPage {
  number: number;
  /** A sparse text layer of the page, kept when OCR finds little more. */
  textLayer?: ExtractedPage;
}

export interface PageTask extends PageTaskPage {
  jobId: string;
  language: LanguageChoice;
}

export type TaskKind = "document" | "page";
export type TaskData<K extends TaskKind> = K extends "document" ? DocumentTask : PageTask;

/** A task taken from the queue: this process holds its lock until it completes, fails or yields it. */
export interface LeasedTask<K extends TaskKind> {
  readonly kind: K;
  readonly id: string;
  readonly data: TaskData<K>;
  /** Failed attempts before this one (0 on the first). */
  readonly attemptsMade: number;
  /** Attempts allowed in all. */
  readonly attempts: number;
  /**
   * The queue gave up on the task before this run (it stalled too often: processes died holding it). Fail it (and
   * its page) without running it.
   */
  readonly gaveUp?: string;
  complete(): Promise<void>;
  /** Fail this attempt: retried later with back-off while attempts are left and `retry` is true, else failed for good. */
  fail(error: Error, retry: boolean): Promise<void>;
  /** Record progress in the task's data, so a run that stops (a crash, an ended budget) resumes from it. */
  update(data: TaskData<K>): Promise<void>;
  /** Put the task back in the queue as it is (this run's budget ended). */
  yield(): Promise<void>;
  /**
   * Documents only: add `pages` as page tasks of this document and park it with `next` as its data until they have
   * all ended (completed or failed for good); then it is taken again. False when it had nothing to wait for.
   */
  waitForPages(pages: PageTask[], next: DocumentTask, options: { priority: number }): Promise<boolean>;
}

export interface QueueCounts {
  documents: { waiting: number; active: number };
  pages: { waiting: number; active: number };
}

export interface WorkQueue {
  readonly kind: "bullmq" | "memory";
  addDocument(task: DocumentTask, options: { priority: number }): Promise<void>;
  /**
   * The next task of `kind`, locked for this process, or null: at once when nothing waits (`block: false`), or after
   * waiting up to a few seconds for one (`block: true`).
   */
  take<K extends TaskKind>(kind: K, options: { block: boolean }): Promise<LeasedTask<K> | null>;
  /** Drop the waiting page tasks of a job (cancelled): best effort, a page task also checks its job before reading. */
  dropPages(jobId: string): Promise<void>;
  /** Check for tasks whose process died holding them (stalled), now and then until `close()`. */
  watchStalled(): Promise<void>;
  counts(): Promise<QueueCounts>;
  close(): Promise<void>;
}
