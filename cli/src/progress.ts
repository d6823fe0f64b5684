/** The slice of a stderr stream the progress bar needs (a fake one in tests). */
interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): boolean;
}

/**
 * `[########------------]  3/8  scan-004.png` on one line of stderr, redrawn in place. Only on a terminal: in a log
 * file or a pipe the carriage returns would be noise, so there it draws nothing.
 *
 * A document read as an asynchronous job shows its pages: for a single file the bar itself counts them
 * (`[####----] 40/120 pages  big.pdf`); with several files the bar still counts files and the pages follow the name.
 */
export class ProgressBar {
  private done = 0;
  private current = "";
  private drawn = false;
  private readonly enabled: boolean;
  /** A single file's job: the bar counts its pages. */
  private pageCount?: { done: number; total: number };

  constructor(
    private readonly stream: ProgressStream,
    private readonly total: number,
  ) {
    this.enabled = stream.isTTY === true && total > 1;
  }

  /** A file started: show its name. */
  start(label: string): void {
    this.current = label;
    this.draw();
  }

  /** A job's progress: `done` of `total` pages read (failed ones included). */
  pages(label: string, done: number, total: number): void {
    if (this.stream.isTTY !== true) return;
    if (this.enabled) {
      this.current = `${label} ${done}/${total} pages`;
    } else {
      this.current = label;
      this.pageCount = { done: Math.min(done, total), total: Math.max(1, total) };
    }
    this.draw();
  }

  /** A file finished (either way). */
  tick(): void {
    this.done = Math.min(this.total, this.done + 1);
    if (this.pageCount) {
      this.clear();
      this.pageCount = undefined;
    }
    this.draw();
  }

  /** Print a line above the bar (an error, a verbose note) without tearing it. */
  log(line: string): void {
    const redraw = this.drawn;
    this.clear();
    this.stream.write(`${line}\n`);
    if (redraw) this.draw();
  }

  /** Remove the bar (before the summary). */
  finish(): void {
    this.clear();
    this.pageCount = undefined;
  }

  render(): string {
    const [done, total, unit] = this.pageCount
      ? [this.pageCount.done, this.pageCount.total, " pages"]
      : [this.done, this.total, ""];
    // A pseudo-terminal may report 0 columns.
    const columns = this.stream.columns || 80;
    const width = Math.max(10, Math.min(30, columns - 40));
    const filled = Math.round((done / total) * width);
    const counter = `${String(done).padStart(String(total).length)}/${total}${unit}`;
    const room = Math.max(0, columns - width - counter.length - 8);
    const label = this.current.length > room ? `…${this.current.slice(this.current.length - room + 1)}` : this.current;
    return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${counter}  ${label}`;
  }

  private clear(): void {
    if (this.drawn) this.stream.write("\r\x1b[2K");
    this.drawn = false;
  }

  private draw(): void {
    if (!this.enabled && !this.pageCount) return;
    this.stream.write(`\r\x1b[2K${this.render()}`);
    this.drawn = true;
  }
}

/** How often a job's progress is written as a plain line when stderr is not a terminal. */
export const PROGRESS_LINE_MS = 10_000;

interface JobState {
  status: string;
  pagesDone: number;
  pagesFailed: number;
  pagesTotal: number;
}

/**
 * Off a terminal a job's progress is a plain line now and then (a log or CI output gets no carriage returns): at most
 * one per `intervalMs`, and only when something changed since the last one.
 */
export class ProgressLines {
  private lastAt = -Infinity;
  private last = "";

  constructor(
    private readonly intervalMs = PROGRESS_LINE_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The line to write for this state of the job, or null for none now. */
  next(job: JobState): string | null {
    const state = `${job.status} ${job.pagesDone} ${job.pagesFailed}`;
    const at = this.now();
    if (state === this.last || at - this.lastAt < this.intervalMs) return null;
    this.last = state;
    this.lastAt = at;
    const failed = job.pagesFailed > 0 ? `, ${job.pagesFailed} failed` : "";
    return `${job.status}, ${job.pagesDone}/${job.pagesTotal} pages read${failed}`;
  }

  /** The job was just submitted or found: the interval counts from here. */
  mark(job: JobState): void {
    this.last = `${job.status} ${job.pagesDone} ${job.pagesFailed}`;
    this.lastAt = this.now();
  }
}
