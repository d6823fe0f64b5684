import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { errorCatalogue } from "@/lib/api/error-catalogue";
import { framedFormats, type OutputFormat } from "@/lib/vocabulary";
import {
  cancelJob,
  getJob,
  getJobPdf,
  getJobResultPart,
  JOB_ID,
  listJobs,
  type JobAnswer,
  type JobResultAnswer,
} from "./api";
import type { Config } from "./config";
import { CliError, EXIT, exitCodeForStatus, Interrupted, UsageError, type ExitCode } from "./errors";
import { sleep } from "./http";
import { ProgressBar, ProgressLines } from "./progress";

/** A job still at work: anything else has ended (a status a later server adds counts as ended: nothing to wait for). */
export const isActive = (job: { status: string }) => job.status === "queued" || job.status === "running";

/** Polling: the service's `Retry-After` (1 s per 20 pages left, up to 30 s), kept within these bounds so a bar moves. */
const POLL_MIN_MS = 1_000;
const POLL_MAX_MS = 10_000;
const POLL_DEFAULT_MS = 2_000;

/** Poll the job until it has ended; `onUpdate` sees every answer. Rejects with the signal's reason on Ctrl-C. */
export async function waitForJob(
  config: Config,
  job: JobAnswer,
  options: { signal?: AbortSignal; onUpdate?: (job: JobAnswer) => void; retryAfterMs?: number | null },
): Promise<JobAnswer> {
  let current = job;
  let retryAfter = options.retryAfterMs ?? null;
  while (isActive(current)) {
    await sleep(Math.min(POLL_MAX_MS, Math.max(POLL_MIN_MS, retryAfter ?? POLL_DEFAULT_MS)), options.signal);
    const answer = await getJob(config, current.jobId, { signal: options.signal });
    current = answer.job;
    retryAfter = answer.retryAfterMs;
    options.onUpdate?.(current);
  }
  return current;
}

/** `pages: [...]` of one part of a `json` result. */
const jsonPartSchema = z.object({ pages: z.array(z.unknown()) }).loose();

export interface WholeResult {
  text: string;
  format: OutputFormat | string;
  confidence: number;
  /** Pages asked for with no result: failed (with the code) or, while the job runs, pending. */
  missing: JobResultAnswer["missingPages"];
  parts: number;
}

/**
 * A job's whole result: `links.result` (with `format` / `pages` when given), then each `next` part, joined the way
 * the service joins pages within a part (`\f` for text, a `---` rule for Markdown, one `pages` array for JSON), so
 * the output is what one response would have held.
 */
export async function readWholeResult(
  config: Config,
  job: Pick<JobAnswer, "jobId" | "links">,
  options: { format?: OutputFormat; pages?: string; signal?: AbortSignal },
): Promise<WholeResult> {
  const query = new URLSearchParams();
  if (options.format) query.set("format", options.format);
  if (options.pages) query.set("pages", options.pages);
  let link: string | null = `${job.links.result}${query.size > 0 ? `?${query}` : ""}`;
  const texts: string[] = [];
  const missing: WholeResult["missing"] = [];
  let format: string = options.format ?? "text";
  let weighted = 0;
  let chars = 0;
  let parts = 0;
  const seen = new Set<string>();
  while (link) {
    if (seen.has(link)) throw new CliError(EXIT.other, `the service named the same result part twice (${link})`);
    seen.add(link);
    const part = await getJobResultPart(config, link, { signal: options.signal });
    parts += 1;
    format = part.format;
    missing.push(...part.missingPages);
    if (part.pages !== "") texts.push(part.extractedText);
    const n = part.extractedText.length;
    weighted += part.confidence * n;
    chars += n;
    link = part.next;
  }
  return { text: joinParts(format, texts), format, confidence: chars === 0 ? 0 : weighted / chars, missing, parts };
}

function joinParts(format: string, texts: string[]): string {
  if (texts.length === 1) return texts[0]!;
  switch (format) {
    case "json": {
      const pages = texts.flatMap((text) => {
        const parsed = jsonPartSchema.safeParse(safeJson(text));
        if (!parsed.success) throw new CliError(EXIT.other, "a part of the JSON result is not a document with pages");
        return parsed.data.pages;
      });
      return JSON.stringify({ pages });
    }
    case "markdown":
      return texts.join("\n\n---\n\n");
    case "hocr":
    case "alto":
    case "tsv": {
      const { head, tail } = framedFormats[format];
      const inner = texts.map((text) => {
        if (!text.startsWith(head) || !text.endsWith(tail))
          throw new CliError(EXIT.other, `a part of the ${format} result is not a whole ${format} document`);
        return text.slice(head.length, text.length - tail.length);
      });
      return head + inner.join("") + tail;
    }
    default:
      return texts.join("\f");
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** `12 pages`, `1 page`. */
export const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`;

/** Failed pages as `7 (unreadable_document), 9 (timeout)`, the first few of them. */
export function describeFailedPages(missing: WholeResult["missing"]): string {
  const failed = missing.filter((page) => page.status === "failed");
  const shown = failed.slice(0, 5).map((page) => `${page.page}${page.code ? ` (${page.code})` : ""}`);
  return `${shown.join(", ")}${failed.length > shown.length ? `, … ${failed.length - shown.length} more` : ""}`;
}

/** The exit code of a job that ended without text: its error code's status, as for a request that failed so. */
export function exitCodeForJob(job: JobAnswer): ExitCode {
  const code = job.error?.code;
  const entry =
    code && Object.hasOwn(errorCatalogue, code) ? errorCatalogue[code as keyof typeof errorCatalogue] : undefined;
  return entry ? exitCodeForStatus(entry.status) : EXIT.other;
}

/** What to say when the job's wait is interrupted: it goes on, and how to get at it later. */
export function interruptedJobMessage(job: JobAnswer): string {
  return (
    `interrupted; job ${job.jobId} goes on at the service (${job.pagesDone}/${job.pagesTotal} pages read; the pages not ` +
    `read stay reserved until it ends). Get its text later with \`ocr jobs result ${job.jobId}\`, or stop it and get ` +
    `the unread pages refunded with \`ocr jobs cancel ${job.jobId}\``
  );
}

export interface JobsIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  cwd: string;
  signal?: AbortSignal;
}

export interface JobsOptions {
  format?: OutputFormat;
  pages?: string;
  out?: string;
  limit?: number;
  cursor?: string;
  json: boolean;
  /** `--no-wait` (result): write the pages read so far instead of waiting for the job to end. */
  noWait: boolean;
}

const EXTENSIONS: Record<string, string> = {
  text: "txt",
  json: "json",
  markdown: "md",
  hocr: "hocr",
  alto: "xml",
  tsv: "tsv",
  pdf: "pdf",
};

/** `ocr jobs list | get ID | result ID | cancel ID`. Resolves with the exit code. */
export async function runJobs(args: string[], options: JobsOptions, config: Config, io: JobsIo): Promise<ExitCode> {
  const [action, ...rest] = args;
  const say = (line: string) => io.stderr.write(`ocr: ${line}\n`);
  const print = (text: string) => write(io.stdout, text.endsWith("\n") ? text : `${text}\n`);
  const jobId = () => {
    if (rest.length !== 1) throw new UsageError(`\`ocr jobs ${action}\` takes one job id`);
    const id = rest[0]!;
    if (!JOB_ID.test(id))
      throw new UsageError(
        `${JSON.stringify(id.slice(0, 40))} is not a job id: they look like job_ and 22 letters, digits, - or _`,
      );
    return id;
  };
  const only = (names: Array<keyof JobsOptions>) => {
    const given = (Object.keys(options) as Array<keyof JobsOptions>).filter(
      (name) => options[name] !== undefined && options[name] !== false,
    );
    const stray = given.find((name) => !names.includes(name));
    if (stray)
      throw new UsageError(`--${stray === "noWait" ? "no-wait" : stray} is not an option of \`ocr jobs ${action}\``);
  };

  switch (action) {
    case "list": {
      only(["limit", "cursor", "json"]);
      if (rest.length > 0) throw new UsageError("`ocr jobs list` takes no job id");
      const list = await listJobs(config, { limit: options.limit, cursor: options.cursor }, { signal: io.signal });
      if (options.json) {
        await print(JSON.stringify(list, null, 2));
        return EXIT.ok;
      }
      await print(list.jobs.length === 0 ? "No jobs." : formatJobTable(list.jobs));
      if (list.nextCursor) say(`older jobs: ocr jobs list --cursor ${list.nextCursor}`);
      return EXIT.ok;
    }
    case "get": {
      only(["json"]);
      const { job } = await getJob(config, jobId(), { signal: io.signal });
      await print(options.json ? JSON.stringify(job, null, 2) : formatJob(job));
      return EXIT.ok;
    }
    case "cancel": {
      only(["json"]);
      const id = jobId();
      const job = await cancelJob(config, id, { signal: io.signal });
      if (options.json) {
        await print(JSON.stringify(job, null, 2));
      } else if (job.status === "cancelled") {
        await print(
          `${job.jobId} cancelled: ${job.pagesDone}/${job.pagesTotal} pages read, ${plural(job.creditsRefunded, "credit")} refunded` +
            (job.pagesDone > 0 ? ` (its text so far: ocr jobs result ${job.jobId})` : ""),
        );
      } else {
        await print(`${job.jobId} had already ended: ${job.status}, ${job.pagesDone}/${job.pagesTotal} pages read`);
      }
      return EXIT.ok;
    }
    case "result":
      only(["format", "pages", "out", "noWait"]);
      return writeJobResult(jobId(), options, config, io);
    case undefined:
      throw new UsageError("`ocr jobs` needs list, get ID, result ID or cancel ID");
    default:
      throw new UsageError(
        `unknown jobs command ${JSON.stringify(action.slice(0, 40))}: use list, get, result or cancel`,
      );
  }
}

/**
 * `ocr jobs result ID`: waits for the job to end (progress on stderr), unless `--no-wait`, then writes its whole
 * result to stdout or `--out` (a file, or `<job id>.<ext>` in a directory).
 */
async function writeJobResult(jobId: string, options: JobsOptions, config: Config, io: JobsIo): Promise<ExitCode> {
  const say = (line: string) => progress.log(`ocr: ${line}`);
  const progress = new ProgressBar(io.stderr, 1);
  const found = await getJob(config, jobId, { signal: io.signal });
  let job = found.job;
  if (!options.noWait && isActive(job)) {
    const lines = new ProgressLines();
    say(
      `${jobId}: ${job.status}, ${job.pagesDone + job.pagesFailed}/${job.pagesTotal} pages read; waiting for it to end (Ctrl-C stops waiting, not the job)`,
    );
    lines.mark(job);
    const show = (current: JobAnswer) => {
      if (io.stderr.isTTY) progress.pages(jobId, current.pagesDone + current.pagesFailed, current.pagesTotal);
      else {
        const line = lines.next(current);
        if (line) say(`${jobId}: ${line}`);
      }
    };
    show(job);
    try {
      job = await waitForJob(config, job, { signal: io.signal, onUpdate: show, retryAfterMs: found.retryAfterMs });
    } catch (error) {
      if (error instanceof Interrupted) {
        progress.finish();
        say(`${jobId}: interrupted; the job goes on at the service. \`ocr jobs result ${jobId}\` again to wait for it`);
        return EXIT.interrupted;
      }
      throw error;
    } finally {
      progress.finish();
    }
  }
  if (job.status === "failed" || (job.status === "cancelled" && job.pagesDone === 0)) {
    const why = job.error ? `${job.error.code}: ${job.error.message}` : "no page was read";
    say(`${jobId}: ${job.status}, no text (${why})`);
    return job.status === "failed" ? exitCodeForJob(job) : EXIT.other;
  }
  if ((options.format ?? job.format) === "pdf") {
    const { pdf, missingPages } = await getJobPdf(config, job, { pages: options.pages, signal: io.signal });
    if (options.out !== undefined) {
      const file = await outputFile(path.resolve(io.cwd, options.out), `${jobId}.pdf`);
      await fs.writeFile(file, pdf);
      say(`${jobId}: written to ${file}`);
    } else {
      await write(io.stdout, pdf);
    }
    if (missingPages)
      say(`${jobId}: ${job.status}: pages ${missingPages} are not in the PDF (not read yet, or could not be read)`);
    return EXIT.ok;
  }
  const result = await readWholeResult(config, job, {
    format: options.format,
    pages: options.pages,
    signal: io.signal,
  });
  const text = result.text.endsWith("\n") ? result.text : `${result.text}\n`;
  if (options.out !== undefined) {
    const file = await outputFile(path.resolve(io.cwd, options.out), `${jobId}.${EXTENSIONS[result.format] ?? "txt"}`);
    await fs.writeFile(file, text);
    say(`${jobId}: written to ${file}`);
  } else {
    await write(io.stdout, text);
  }
  const pending = result.missing.filter((page) => page.status === "pending").length;
  if (pending > 0) say(`${jobId}: ${job.status}: ${plural(pending, "page")} not read yet (this is the text so far)`);
  if (result.missing.some((page) => page.status === "failed"))
    say(`${jobId}: pages that could not be read (refunded): ${describeFailedPages(result.missing)}`);
  return EXIT.ok;
}

/** `--out`: an existing directory (or a path ending in `/`) gets `<name>`; anything else is the file itself. */
async function outputFile(target: string, name: string): Promise<string> {
  const isDirectory = await fs.stat(target).then(
    (stat) => stat.isDirectory(),
    () => false,
  );
  if (isDirectory) return path.join(target, name);
  if (/[/\\]$/.test(target)) {
    await fs.mkdir(target, { recursive: true });
    return path.join(target, name);
  }
  await fs.mkdir(path.dirname(target), { recursive: true });
  return target;
}

const shortTime = (iso: string | null) => (iso ? iso.replace("T", " ").replace(/\.\d+Z$|Z$/, "Z") : "—");

/** One line per job: id, status, pages read/total (failed), credits used/reserved (refunded), created (UTC). */
export function formatJobTable(jobs: JobAnswer[]): string {
  const rows = [
    ["JOB", "STATUS", "PAGES", "CREDITS", "CREATED"],
    ...jobs.map((job) => [
      job.jobId,
      job.status,
      `${job.pagesDone}/${job.pagesTotal}${job.pagesFailed > 0 ? ` (${job.pagesFailed} failed)` : ""}`,
      `${job.creditsUsed}/${job.creditsReserved}${job.creditsRefunded > 0 ? ` (${job.creditsRefunded} refunded)` : ""}`,
      shortTime(job.createdAt),
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join("  "),
    )
    .join("\n");
}

/** `ocr jobs get`: the job as `name: value` lines. */
export function formatJob(job: JobAnswer): string {
  const lines: Array<[string, string]> = [
    ["job", job.jobId],
    ["status", job.status],
    ["pages", `${job.pagesDone} read, ${job.pagesFailed} failed, of ${job.pagesTotal} (the file has ${job.pageCount})`],
    ["credits", `${job.creditsUsed} used, ${job.creditsReserved} reserved, ${job.creditsRefunded} refunded`],
    ["format", job.format],
    ["input", job.inputSource],
    ["created", shortTime(job.createdAt)],
    ["started", shortTime(job.startedAt)],
    ["finished", shortTime(job.finishedAt)],
    ["expires", shortTime(job.expiresAt)],
  ];
  if (job.error) lines.push(["error", `${job.error.code}: ${job.error.message}`]);
  for (const page of job.failedPages ?? []) lines.push([`page ${page.page}`, `${page.code}: ${page.message}`]);
  if (job.webhook) {
    const last = job.webhook.deliveries[0];
    const outcome = !last
      ? "no attempt yet"
      : `attempt ${last.attempt} ${shortTime(last.at)}: ${last.ok ? `delivered (HTTP ${last.status})` : `${last.status === null ? (last.error ?? "no answer") : `HTTP ${last.status}`}${last.retrying ? ", will be retried" : ""}`}`;
    lines.push(["webhook", `${job.webhook.url} — ${outcome}`]);
  }
  if (job.pagesDone > 0) lines.push(["result", `ocr jobs result ${job.jobId}`]);
  const width = Math.max(...lines.map(([name]) => name.length)) + 1;
  return lines.map(([name, value]) => `${`${name}:`.padEnd(width)} ${value}`).join("\n");
}

function write(stream: NodeJS.WritableStream, text: string | Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => stream.write(text, (error) => (error ? reject(error) : resolve())));
}

/** For extract: a failed job's refusal, as a CliError with the exit code its error code maps to. */
export function failedJobError(job: JobAnswer): CliError {
  const why = job.error ? `${job.error.code}: ${job.error.message}` : "no page could be read";
  return new CliError(exitCodeForJob(job), `job ${job.jobId} failed: ${why}`);
}
