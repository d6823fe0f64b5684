/** The slice of a stderr stream the progress bar needs (a fake one in tests). */
interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): boolean;
}

/**
 * `[########------------]  3/8  scan-004.png` on one line of stderr, redrawn in place. Only on a terminal: in a log
 * file or a pipe the carriage returns would be noise, so there it draws nothing.
 */
export class ProgressBar {
  private done = 0;
  private current = "";
  private drawn = false;
  private readonly enabled: boolean;

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

  /** A file finished (either way). */
  tick(): void {
    this.done = Math.min(this.total, this.done + 1);
    this.draw();
  }

  /** Print a line above the bar (an error, a verbose note) without tearing it. */
  log(line: string): void {
    if (this.enabled && this.drawn) this.stream.write("\r\x1b[2K");
    this.stream.write(`${line}\n`);
    if (this.drawn) this.draw();
  }

  /** Remove the bar (before the summary). */
  finish(): void {
    if (this.enabled && this.drawn) this.stream.write("\r\x1b[2K");
    this.drawn = false;
  }

  render(): string {
    const width = Math.max(10, Math.min(30, (this.stream.columns ?? 80) - 40));
    const filled = Math.round((this.done / this.total) * width);
    const counter = `${String(this.done).padStart(String(this.total).length)}/${this.total}`;
    const room = Math.max(0, (this.stream.columns ?? 80) - width - counter.length - 8);
    const label = this.current.length > room ? `…${this.current.slice(this.current.length - room + 1)}` : this.current;
    return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${counter}  ${label}`;
  }

  private draw(): void {
    if (!this.enabled) return;
    this.stream.write(`\r\x1b[2K${this.render()}`);
    this.drawn = true;
  }
}
