/**
 * Exit codes (documented in docs/cli.md). Scripts branch on them, so they never change meaning:
 * 0 ok, 1 anything else, 2 usage, 3 authentication, 4 credits, 5 input (a file the service or the CLI refused, a job
 * it does not know or whose results expired), 130 interrupted (Ctrl-C; a job goes on, see `ocr jobs`).
 */
export const EXIT = {
  ok: 0,
  other: 1,
  usage: 2,
  auth: 3,
  credits: 4,
  input: 5,
  interrupted: 130,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A failure with its exit code and a message for stderr (already readable: no stack). */
export class CliError extends Error {
  readonly exitCode: ExitCode;

  constructor(exitCode: ExitCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}

export class UsageError extends CliError {
  constructor(message: string) {
    super(EXIT.usage, message);
    this.name = "UsageError";
  }
}

/** Ctrl-C: the reason the CLI's work is aborted with. */
export class Interrupted extends Error {
  constructor() {
    super("interrupted");
    this.name = "Interrupted";
  }
}

/**
 * The exit code of a service answer: 401/403 auth, 402 credits, a refused file input or an unknown (404) or expired
 * (410) job, anything else other.
 */
export function exitCodeForStatus(status: number): ExitCode {
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 402) return EXIT.credits;
  if ([400, 404, 410, 413, 415, 422].includes(status)) return EXIT.input;
  return EXIT.other;
}
