import { randomUUID } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { OutputFormat } from "@/lib/vocabulary";
import {
  extractDocument,
  getJobPdf,
  NoAnswerInTime,
  preferWaitSeconds,
  ServiceError,
  submitJob,
  type JobAnswer,
  type OcrRequestBody,
} from "./api";
import type { Config } from "./config";
import { CliError, EXIT, Interrupted, type ExitCode } from "./errors";
import type { RetryInfo } from "./http";
import {
  describeFailedPages,
  failedJobError,
  interruptedJobMessage,
  isActive,
  plural,
  readWholeResult,
  waitForJob,
} from "./jobs";
import { ProgressBar, ProgressLines } from "./progress";

/**
 * How a document is sent: `auto` tries `POST /api/ocr/process` and submits a job when the service answers that the
 * document is past the synchronous limits; `async` always submits a job, `sync` never does.
 */
export type ExtractMode = "auto" | "async" | "sync";

export interface ExtractOptions {
  format: OutputFormat;
  pages?: string;
  language?: string;
  /** Write `<name>.<ext>` files here; default: stdout for one input, the working directory for several. */
  out?: string;
  concurrency: number;
  verbose: boolean;
  mode: ExtractMode;
  /** Each job announces its end to this URL (`webhook.url`); documents then always go as jobs. */
  webhook?: string;
}

interface ExtractIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stdin: NodeJS.ReadableStream;
  cwd: string;
  /** Ctrl-C: aborted with {@link Interrupted}. */
  signal?: AbortSignal;
}

const EXTENSIONS: Record<OutputFormat, string> = {
  text: "txt",
  json: "json",
  markdown: "md",
  hocr: "hocr",
  alto: "xml",
  tsv: "tsv",
  pdf: "pdf",
};

/**
 * `--out` names the output file itself (not a directory) when there is one input and it ends with the format's
 * extension, as in `ocr extract scan.png --format pdf -o out.pdf`, and is not an existing directory.
 */
async function outputFileTarget(
  out: string | undefined,
  inputs: number,
  format: OutputFormat,
  cwd: string,
): Promise<string | undefined> {
  if (out === undefined || inputs !== 1 || !out.toLowerCase().endsWith(`.${EXTENSIONS[format]}`)) return undefined;
  const target = path.resolve(cwd, out);
  const isDirectory = await fs.stat(target).then(
    (stat) => stat.isDirectory(),
    () => false,
  );
  return isDirectory ? undefined : target;
}

type Source =
  | { kind: "file"; label: string; path: string }
  | { kind: "url"; label: string; url: string }
  | { kind: "stdin"; label: string };

interface Job {
  source: Source;
  /** Output file name (without directory), unique within the run. */
  outputName: string;
  outcome?: { ok: true; file?: string } | { ok: false; exitCode: ExitCode; message: string } | { skipped: true };
  /** Set once the document was accepted as an asynchronous job. */
  job?: JobAnswer;
  /** Its submission was sent (the answer may not have come back). */
  submitting?: boolean;
}

/**
 * `ocr extract <file-or-url>...`: local files go inline as base64 (refused above the inline limit: the CLI never
 * uploads a file anywhere by itself), URLs as `imageUrl`. One input without `--out` → the text on stdout; otherwise
 * one `<name>.<ext>` per input. Returns the exit code: 0, or that of the first input (in argument order) that failed.
 * A 401 or 402 stops the run: every later request would get the same answer. A document past the synchronous limits
 * becomes an asynchronous job (see {@link ExtractMode}), waited for with its pages' progress on stderr.
 */
export async function runExtract(
  inputs: string[],
  options: ExtractOptions,
  config: Config,
  io: ExtractIo,
): Promise<ExitCode> {
  const sources = inputs.map(toSource);
  const outFile = await outputFileTarget(options.out, sources.length, options.format, io.cwd);
  const toFiles = options.out !== undefined || sources.length > 1;
  const outDir = outFile ? path.dirname(outFile) : path.resolve(io.cwd, options.out ?? ".");
  const jobs = assignOutputNames(sources, options.format);
  if (outFile) jobs[0]!.outputName = path.basename(outFile);
  if (toFiles) await ensureDirectory(outDir);

  const progress = new ProgressBar(io.stderr, jobs.length);
  const note = (line: string) => progress.log(`ocr: ${line}`);
  let stopped: ServiceError | undefined;
  let interrupted = false;
  let next = 0;

  const runJob = async (job: Job) => {
    progress.start(job.source.label);
    try {
      const body = await requestBody(job.source, options, config, io);
      let text: string | Uint8Array;
      let detail: string | undefined;
      let switched: string | undefined;
      let accepted: Awaited<ReturnType<typeof submitJob>> | undefined;
      if (options.mode !== "async") {
        try {
          // In `auto` the service may answer with a job by itself: when it expects the reading to outlast the wait.
          const answer = await extractDocument(config, body, {
            idempotencyKey: randomUUID(),
            onRetry: options.verbose ? (info) => note(`${job.source.label}: ${describeRetry(info)}`) : undefined,
            signal: io.signal,
            asyncIfLong: options.mode === "auto",
          });
          if (answer.kind === "job") {
            accepted = answer;
            switched = `too long to read within ${preferWaitSeconds(config.timeoutMs)} s, the service answered with a job`;
          } else {
            // A PDF comes as base64 in the answer: written as the file it is.
            text = options.format === "pdf" ? decodePdf(answer.result.extractedText) : answer.result.extractedText;
            detail = describeSuccess(answer.result, answer.creditsRemaining, answer.replayed);
          }
        } catch (error) {
          switched = options.mode === "auto" ? pastSynchronousLimitsOrTimedOut(error, job.source) : undefined;
          if (switched === undefined) throw withTimeoutAdvice(error, options.mode);
        }
      }
      if (switched !== undefined || options.mode === "async") {
        ({ text, detail } = await readAsJob(job, accepted ?? body, switched));
      }
      const output = typeof text! === "string" ? withFinalNewline(text) : text!;
      let file: string | undefined;
      if (toFiles) {
        file = path.join(outDir, job.outputName);
        await fs.writeFile(file, output);
      } else {
        await write(io.stdout, output);
      }
      job.outcome = { ok: true, file };
      if (options.verbose) note(`${job.source.label}: ${detail}${file ? `, → ${file}` : ""}`);
    } catch (error) {
      if (error instanceof Interrupted || io.signal?.aborted) {
        interrupted = true;
        job.outcome = { ok: false, exitCode: EXIT.interrupted, message: "interrupted" };
        const what = job.job
          ? interruptedJobMessage(job.job)
          : job.submitting
            ? "interrupted while submitting it as a job; if the service accepted it, `ocr jobs list` shows it"
            : "interrupted";
        note(`${job.source.label}: ${what}`);
        return;
      }
      const failure = asCliError(error);
      job.outcome = { ok: false, exitCode: failure.exitCode, message: failure.message };
      note(`${job.source.label}: ${failure.message}`);
      if (failure instanceof ServiceError && (failure.exitCode === EXIT.auth || failure.exitCode === EXIT.credits))
        stopped ??= failure;
    } finally {
      progress.tick();
    }
  };

  /**
   * The document as an asynchronous job: submitted (the same body), its progress shown until it ends, then its whole
   * result read (every part). A job that ends without text is an error; failed pages of one that succeeded are a
   * warning (they were refunded).
   */
  const readAsJob = async (
    job: Job,
    toSubmit: OcrRequestBody | Awaited<ReturnType<typeof submitJob>>,
    why: string | undefined,
  ): Promise<{ text: string | Uint8Array; detail: string }> => {
    const label = job.source.label;
    const started = Date.now();
    job.submitting = true;
    // The document, or the job the service already made of it (`Prefer: respond-async, wait=N` answered 202).
    const submitted =
      "job" in toSubmit
        ? toSubmit
        : await submitJob(config, toSubmit, {
            signal: io.signal,
            onRetry: options.verbose ? (info) => note(`${label}: ${describeRetry(info)}`) : undefined,
          });
    job.job = submitted.job;
    note(
      `${label}: ${why ? `${why}: ` : ""}${"job" in toSubmit ? "" : "sent as "}job ${submitted.job.jobId} (${plural(submitted.job.pagesTotal, "page")}, ` +
        `${plural(submitted.job.creditsReserved, "credit")} reserved); waiting for it (Ctrl-C stops waiting, not the job)`,
    );
    const lines = new ProgressLines();
    lines.mark(submitted.job);
    const show = (current: JobAnswer) => {
      job.job = current;
      const read = current.pagesDone + current.pagesFailed;
      if (io.stderr.isTTY) progress.pages(label, read, current.pagesTotal);
      else {
        const line = lines.next(current);
        if (line) note(`${label}: job ${current.jobId}: ${line}`);
      }
    };
    show(submitted.job);
    const ended = isActive(submitted.job)
      ? await waitForJob(config, submitted.job, { signal: io.signal, onUpdate: show })
      : submitted.job;
    job.job = ended;
    if (ended.status === "failed") throw failedJobError(ended);
    if (ended.status !== "succeeded") {
      throw new CliError(
        EXIT.other,
        `job ${ended.jobId} ended ${ended.status}${ended.error ? ` (${ended.error.code}: ${ended.error.message})` : ""} after ` +
          `${ended.pagesDone}/${ended.pagesTotal} pages${ended.pagesDone > 0 ? `; those pages: ocr jobs result ${ended.jobId}` : ""}`,
      );
    }
    if (options.format === "pdf") {
      const { pdf, missingPages } = await getJobPdf(config, ended, { signal: io.signal });
      if (missingPages)
        note(`${label}: job ${ended.jobId}: pages ${missingPages} could not be read (refunded) and are not in the PDF`);
      const detail = [
        `job ${ended.jobId}`,
        `${ended.pagesDone}/${ended.pagesTotal} pages`,
        `${plural(ended.creditsUsed, "credit")} used`,
        `${((Date.now() - started) / 1000).toFixed(1)} s`,
      ];
      return { text: pdf, detail: detail.join(", ") };
    }
    const result = await readWholeResult(config, ended, { signal: io.signal });
    if (ended.pagesFailed > 0) {
      note(
        `${label}: job ${ended.jobId}: ${plural(ended.pagesFailed, "page")} could not be read (refunded): ${describeFailedPages(result.missing)}`,
      );
    }
    const detail = [
      `job ${ended.jobId}`,
      `${ended.pagesDone}/${ended.pagesTotal} pages`,
      `${plural(ended.creditsUsed, "credit")} used`,
      ended.creditsRefunded > 0 ? `${ended.creditsRefunded} refunded` : undefined,
      `confidence ${result.confidence.toFixed(1)}`,
      `${((Date.now() - started) / 1000).toFixed(1)} s`,
      result.parts > 1 ? `${result.parts} parts` : undefined,
    ];
    return { text: result.text, detail: detail.filter(Boolean).join(", ") };
  };

  const worker = async () => {
    while (next < jobs.length) {
      const job = jobs[next++]!;
      if (stopped || interrupted || io.signal?.aborted) {
        job.outcome = { skipped: true };
        continue;
      }
      await runJob(job);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, jobs.length) }, worker));
  progress.finish();

  const failed = jobs.filter((job) => job.outcome && "ok" in job.outcome && !job.outcome.ok);
  const skipped = jobs.filter((job) => job.outcome && "skipped" in job.outcome);
  if (interrupted) return EXIT.interrupted;
  if (stopped && skipped.length > 0) {
    note(
      `stopped after ${stopped.code}: ${skipped.length} input${skipped.length === 1 ? "" : "s"} not sent (${skipped.map((job) => job.source.label).join(", ")})`,
    );
  }
  if (toFiles && (options.verbose || failed.length > 0 || skipped.length > 0) && jobs.length > 1) {
    const written = jobs.length - failed.length - skipped.length;
    note(
      `${written} of ${jobs.length} written to ${outDir}${failed.length ? `, ${failed.length} failed` : ""}${skipped.length ? `, ${skipped.length} skipped` : ""}`,
    );
  }
  for (const job of jobs) {
    if (job.outcome && "ok" in job.outcome && !job.outcome.ok) return job.outcome.exitCode;
  }
  return stopped?.exitCode ?? EXIT.ok;
}

function toSource(input: string): Source {
  if (input === "-") return { kind: "stdin", label: "stdin" };
  if (/^https?:\/\//i.test(input)) return { kind: "url", label: input, url: input };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(input)) {
    throw new CliError(
      EXIT.input,
      `${input.slice(0, 200)}: only http(s) URLs can be read (the service downloads them); pass a local file by its path`,
    );
  }
  return { kind: "file", label: input, path: input };
}

/** `<name>.<ext>` for each input, in argument order; a name already taken in this run gets `-2`, `-3`, …. */
function assignOutputNames(sources: Source[], format: OutputFormat): Job[] {
  const taken = new Set<string>();
  return sources.map((source) => {
    const stem = outputStem(source);
    let name = `${stem}.${EXTENSIONS[format]}`;
    for (let n = 2; taken.has(name.toLowerCase()); n++) name = `${stem}-${n}.${EXTENSIONS[format]}`;
    taken.add(name.toLowerCase());
    return { source, outputName: name };
  });
}

function outputStem(source: Source): string {
  let base = "stdin";
  if (source.kind === "file") base = path.basename(source.path);
  if (source.kind === "url") {
    const segment = new URL(source.url).pathname.split("/").filter(Boolean).pop() ?? "";
    try {
      base = decodeURIComponent(segment);
    } catch {
      base = segment;
    }
  }
  const stem = base
    .replace(/\.[A-Za-z0-9]{1,5}$/, "")
    .replace(/[^\p{L}\p{N}._-]+/gu, "_")
    .replace(/^[._]+/, "")
    .slice(0, 120);
  return stem || "document";
}

async function requestBody(
  source: Source,
  options: ExtractOptions,
  config: Config,
  io: ExtractIo,
): Promise<OcrRequestBody> {
  const requestOptions: OcrRequestBody["options"] = { format: options.format };
  if (options.pages !== undefined) requestOptions.pages = options.pages;
  if (options.language !== undefined) requestOptions.language = options.language;
  const webhook = options.webhook !== undefined ? { webhook: { url: options.webhook } } : {};
  if (source.kind === "url") return { imageUrl: source.url, options: requestOptions, ...webhook };
  const bytes =
    source.kind === "file"
      ? await readLocalFile(source.path, config.maxInlineBytes)
      : await readStdin(io.stdin, config.maxInlineBytes);
  return {
    file: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    options: requestOptions,
    ...webhook,
  };
}

async function readLocalFile(file: string, limit: number): Promise<Buffer> {
  let stat;
  try {
    stat = await fs.stat(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CliError(EXIT.input, code === "ENOENT" ? "no such file" : `cannot read it (${code ?? "error"})`);
  }
  if (!stat.isFile()) throw new CliError(EXIT.input, "not a file");
  if (stat.size > limit) throw tooLarge(stat.size, limit, path.basename(file));
  if (stat.size === 0) throw new CliError(EXIT.input, "the file is empty");
  return fs.readFile(file);
}

async function readStdin(stdin: NodeJS.ReadableStream, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin) {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array);
    size += buffer.length;
    if (size > limit) throw tooLarge(size, limit, "file", true);
    chunks.push(buffer);
  }
  if (size === 0) throw new CliError(EXIT.input, "stdin is empty");
  return Buffer.concat(chunks);
}

/**
 * Why a document the service refused synchronously goes as a job instead (`auto` mode), or undefined when it does
 * not: a `413` naming the jobs route (past the synchronous work limit: MAX_PDF_PAGES pages that need OCR), a URL
 * file over the synchronous download limit (a job fetches up to MAX_JOB_URL_BYTES), or the service's own `504
 * timeout` (the request deadline passed; nothing was charged). The service gives no field for this, so the 413s
 * are told apart by their message.
 */
function pastSynchronousLimits(error: unknown, source: Source): string | undefined {
  if (!(error instanceof ServiceError)) return undefined;
  if (error.status === 413 && error.message.includes("/api/ocr/jobs")) return "too much work for one request (413)";
  if (error.status === 413 && source.kind === "url" && error.message.includes("limit for URL files")) {
    return "larger than one request downloads (413)";
  }
  if (error.status === 504 && error.code === "timeout") return "not read within one request's deadline (504)";
  return undefined;
}

/**
 * Reading now that took longer than the CLI waits (`NoAnswerInTime`) or the service's deadline (`504`) in `sync`
 * mode: the same read would take as long again, so say what does work instead.
 */
function pastSynchronousLimitsOrTimedOut(error: unknown, source: Source): string | undefined {
  if (error instanceof NoAnswerInTime) return `no answer within ${Math.round(error.timeoutMs / 1000)} s`;
  return pastSynchronousLimits(error, source);
}

function withTimeoutAdvice(error: unknown, mode: ExtractMode): unknown {
  const timedOut = error instanceof NoAnswerInTime || (error instanceof ServiceError && error.code === "timeout");
  if (!timedOut || mode !== "sync") return error;
  const advice =
    " — with --sync the CLI does not send it as a job: drop --sync (a long document then goes as a job by itself), " +
    "or use --async";
  return new CliError(error.exitCode, `${error.message}${advice}`, { cause: error });
}

/** Inline input is capped by the service (MAX_INLINE_BYTES); bigger files are fetched by URL, never uploaded by us. */
function tooLarge(size: number, limit: number, name: string, atLeast = false): CliError {
  return new CliError(
    EXIT.input,
    `${atLeast ? "over " : ""}${formatBytes(atLeast ? limit : size)}, too large to send inline (the limit is ${formatBytes(limit)}). ` +
      `Put the file at a public http(s) URL and pass that instead, e.g. \`ocr extract https://example.com/${name}\`: ` +
      "the service downloads files of up to 25 MB per request, and up to 200 MB as an asynchronous job (which ocr " +
      "submits by itself when a document is past the synchronous limits, or with --async). ocr never uploads a file " +
      "anywhere by itself.",
  );
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

async function ensureDirectory(dir: string): Promise<void> {
  try {
    await fs.mkdir(dir, { recursive: true });
  } catch (error) {
    throw new CliError(
      EXIT.other,
      `cannot create the output directory ${dir}: ${(error as NodeJS.ErrnoException).code ?? "error"}`,
    );
  }
}

function asCliError(error: unknown): CliError {
  if (error instanceof CliError) return error;
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return new CliError(EXIT.other, code ? `${code}: ${message}` : message);
}

function decodePdf(base64: string): Uint8Array {
  const pdf = new Uint8Array(Buffer.from(base64, "base64"));
  if (new TextDecoder().decode(pdf.subarray(0, 5)) !== "%PDF-")
    throw new CliError(EXIT.other, "the service's pdf answer is not a PDF");
  return pdf;
}

function withFinalNewline(text: string): string {
  return text.endsWith("\n") ? text : `${text}\n`;
}

function write(stream: NodeJS.WritableStream, text: string | Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => stream.write(text, (error) => (error ? reject(error) : resolve())));
}

function describeRetry(info: RetryInfo): string {
  return `${info.reason}; retrying in ${(info.delayMs / 1000).toFixed(1)} s (attempt ${info.attempt + 1})`;
}

function describeSuccess(
  result: { creditsUsed: number; confidence: number; processingTime: number; requestId?: string },
  remaining: number | null,
  replayed: boolean,
): string {
  const parts = [
    `${result.creditsUsed} credit${result.creditsUsed === 1 ? "" : "s"} used`,
    remaining === null ? undefined : `${remaining} remaining`,
    `confidence ${result.confidence.toFixed(1)}`,
    `${result.processingTime} ms`,
    replayed ? "replayed" : undefined,
    result.requestId,
  ];
  return parts.filter(Boolean).join(", ");
}
