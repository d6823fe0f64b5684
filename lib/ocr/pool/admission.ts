import { OcrError } from "../model/ocr-error";

/**
 * Admission: a request is refused at once (`overloaded`, with a retry delay) when its work could not start before its
 * deadline, instead of waiting to time out. Measured in expected seconds (estimates.ts), not jobs.
 */

/** Admission wants this much of a job's work (or all of it, when shorter) to fit before the deadline. */
const MIN_WORK_MS = 1_000;
/**
 * How much longer than expected admission counts the wait: the wait is a sum of estimates, each off by up to ~3×
 * (docs/decisions.md#admission-margin).
 */
const WAIT_MARGIN = 1.25;
/** A later job of an admitted request is refused only when this many times the queue limit already waits. */
const FOLLOWING_QUEUE_FACTOR = 4;

/**
 * A place held for a request between its admission (before it is charged) and its first job: counted in the wait
 * that later requests see, so a burst cannot all be admitted against the same empty queue. Released when the job
 * is queued, or when the request ends without one (402, errors).
 */
export interface Admission {
  release(): void;
}

/** How a job passes admission when it is run (`RunOptions.admission`). */
export type JobAdmission =
  /** Judged now, as `admit()` judges a request (the default). */
  | { kind: "judge" }
  /** Admitted when its request was opened (`admit()`): it takes that place in the queue without being judged again. */
  | { kind: "admitted"; place: Admission }
  /**
   * A later job of an admitted request (a PDF's next page): it waits its turn, refused only when the queue holds
   * four times its limit.
   */
  | { kind: "follows" };

/** The places admitted requests hold in one lane (`Admission`), and their estimates summed. */
export class HeldPlaces {
  count = 0;
  ms = 0;

  /** Hold a place of `estimateMs` until `release()` (idempotent). */
  hold(estimateMs: number): Admission {
    this.count++;
    this.ms += estimateMs;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.count--;
        this.ms -= estimateMs;
      },
    };
  }
}

/** What admission looks at in a lane. */
export interface AdmissionQuestion {
  /** Expected wait before a new job starts (estimates.ts `expectedWaitMs`). */
  waitMs: number;
  /** Jobs waiting and places held. */
  queued: number;
  queueLimit: number;
  estimateMs: number;
  deadline: number;
  now: number;
}

/**
 * Throw `overloaded` for what could not start (and get a second of work done) before its deadline, with a retry
 * after the expected wait; also when `queueLimit` jobs already wait. An idle lane always admits: a deadline too
 * short for the work itself ends as `deadline`, not as "busy".
 */
export function judgeAdmission({ waitMs, queued, queueLimit, estimateMs, deadline, now }: AdmissionQuestion): void {
  const retryAfterSeconds = Math.min(120, Math.max(1, Math.ceil(waitMs / 1000)));
  if (queued >= queueLimit) {
    throw new OcrError("overloaded", "The OCR queue is full; retry shortly", { retryAfterSeconds });
  }
  if (waitMs > 0 && now + waitMs * WAIT_MARGIN + Math.min(estimateMs, MIN_WORK_MS) > deadline) {
    throw new OcrError(
      "overloaded",
      `The OCR engine is busy: this request would wait about ${Math.ceil(waitMs / 1000)} s and could not finish before its deadline; retry shortly`,
      { retryAfterSeconds },
    );
  }
}

/** A later job of an admitted request (`{ kind: "follows" }`): refused only when the queue is far past its limit. */
export function judgeFollowing(queued: number, queueLimit: number): void {
  if (queued >= queueLimit * FOLLOWING_QUEUE_FACTOR)
    throw new OcrError("overloaded", "The OCR queue is full; retry shortly");
}
