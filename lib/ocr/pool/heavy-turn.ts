/**
 * One process at a time may run a memory-heavy step (the second recognizer's pass: its detector's buffers come on
 * top of the process's Tesseract). The others wait for their turn in the middle of their job; a process that
 * finishes its job or dies gives the turn back.
 */

/** A process as the turn sees it. */
export interface TurnTaker {
  /** Running a job (only a busy process may ask for the turn). */
  readonly busy: boolean;
  /** Its message channel is open (a process that went away is skipped). */
  readonly connected: boolean;
  /** Tell the process the turn is its own. */
  grant(): void;
}

export class HeavyTurn<P extends TurnTaker> {
  private holder?: P;
  private waiting: P[] = [];

  /** `process` asks for the turn: granted now when free, else when the processes before it give it back. */
  acquire(process: P): void {
    if (!process.busy || this.waiting.includes(process) || this.holder === process) return;
    if (this.holder) {
      this.waiting.push(process);
      return;
    }
    this.holder = process;
    process.grant();
  }

  /** `process` gives the turn back (or stops waiting for it); the next one still connected gets it. */
  release(process: P): void {
    this.waiting = this.waiting.filter((p) => p !== process);
    if (this.holder !== process) return;
    this.holder = undefined;
    for (let next = this.waiting.shift(); next; next = this.waiting.shift()) {
      if (!next.connected) continue;
      this.holder = next;
      next.grant();
      return;
    }
  }
}
