import { randomUUID } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { OutputFormat } from "@/lib/vocabulary";
import { extractDocument, ServiceError, type OcrRequestBody } from "./api";
import type { Config } from "./config";
import { CliError, EXIT, type ExitCode } from "./errors";
import type { RetryInfo } from "./http";
import { ProgressBar } from "./progress";

export interface ExtractOptions {
  format: OutputFormat;
  pages?: string;
  language?: string;
  /** Write `<name>.<ext>` files here; default: stdout for one input, the working directory for several. */
  out?: string;
  concurrency: number;
  verbose: boolean;
}

interface ExtractIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stdin: NodeJS.ReadableStream;
  cwd: string;
}

const EXTENSIONS: Record<OutputFormat, string> = { text: "txt", json: "json", markdown: "md" };

type Source =
  | { kind: "file"; label: string; path: string }
  | { kind: "url"; label: string; url: string }
  | { kind: "stdin"; label: string };

interface Job {
  source: Source;
  /** Output file name (without directory), unique within the run. */
  outputName: string;
  outcome?: { ok: true; file?: string } | { ok: false; exitCode: ExitCode; message: string } | { skipped: true };
}

/**
 * `ocr extract <file-or-url>...`: local files go inline as base64 (refused above the inline limit: the CLI never
 * uploads a file anywhere by itself), URLs as `imageUrl`. One input without `--out` → the text on stdout; otherwise
 * one `<name>.<ext>` per input. Returns the exit code: 0, or that of the first input (in argument order) that failed.
 * A 401 or 402 stops the run: every later request would get the same answer.
 */
export async function runExtract(inputs: string[], options: ExtractOptions, config: Config, io: ExtractIo): Promise<ExitCode> {
  const sources = inputs.map(toSource);
  const toFiles = options.out !== undefined || sources.length > 1;
  const outDir = path.resolve(io.cwd, options.out ?? ".");
  const jobs = assignOutputNames(sources, options.format);
  if (toFiles) await ensureDirectory(outDir);

  const progress = new ProgressBar(io.stderr, jobs.length);
  const note = (line: string) => progress.log(`ocr: ${line}`);
  let stopped: ServiceError | undefined;
  let next = 0;

  const runJob = async (job: Job) => {
    progress.start(job.source.label);
    try {
      const body = await requestBody(job.source, options, config, io);
      const answer = await extractDocument(config, body, {
        idempotencyKey: randomUUID(),
        onRetry: options.verbose ? (info) => note(`${job.source.label}: ${describeRetry(info)}`) : undefined,
      });
      const text = withFinalNewline(answer.result.extractedText);
      let file: string | undefined;
      if (toFiles) {
        file = path.join(outDir, job.outputName);
        await fs.writeFile(file, text);
      } else {
        await write(io.stdout, text);
      }
      job.outcome = { ok: true, file };
      if (options.verbose) note(`${job.source.label}: ${describeSuccess(answer.result, answer.creditsRemaining, answer.replayed, file)}`);
    } catch (error) {
      const failure = asCliError(error);
      job.outcome = { ok: false, exitCode: failure.exitCode, message: failure.message };
      note(`${job.source.label}: ${failure.message}`);
      if (failure instanceof ServiceError && (failure.exitCode === EXIT.auth || failure.exitCode === EXIT.credits)) stopped ??= failure;
    } finally {
      progress.tick();
    }
  };

  const worker = async () => {
    while (next < jobs.length) {
      const job = jobs[next++]!;
      if (stopped) {
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
  if (stopped && skipped.length > 0) {
    note(`stopped after ${stopped.code}: ${skipped.length} input${skipped.length === 1 ? "" : "s"} not sent (${skipped.map((job) => job.source.label).join(", ")})`);
  }
  if (toFiles && (options.verbose || failed.length > 0 || skipped.length > 0) && jobs.length > 1) {
    const written = jobs.length - failed.length - skipped.length;
    note(`${written} of ${jobs.length} written to ${outDir}${failed.length ? `, ${failed.length} failed` : ""}${skipped.length ? `, ${skipped.length} skipped` : ""}`);
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
    throw new CliError(EXIT.input, `${input.slice(0, 200)}: only http(s) URLs can be read (the service downloads them); pass a local file by its path`);
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
  const stem = base.replace(/\.[A-Za-z0-9]{1,5}$/, "").replace(/[^\p{L}\p{N}._-]+/gu, "_").replace(/^[._]+/, "").slice(0, 120);
  return stem || "document";
}

async function requestBody(source: Source, options: ExtractOptions, config: Config, io: ExtractIo): Promise<OcrRequestBody> {
  const requestOptions: OcrRequestBody["options"] = { format: options.format };
  if (options.pages !== undefined) requestOptions.pages = options.pages;
  if (options.language !== undefined) requestOptions.language = options.language;
  if (source.kind === "url") return { imageUrl: source.url, options: requestOptions };
  const bytes = source.kind === "file" ? await readLocalFile(source.path, config.maxInlineBytes) : await readStdin(io.stdin, config.maxInlineBytes);
  return { image: bytes.toString("base64"), options: requestOptions };
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

/** Inline input is capped by the service (MAX_INLINE_BYTES); bigger files are fetched by URL, never uploaded by us. */
function tooLarge(size: number, limit: number, name: string, atLeast = false): CliError {
  return new CliError(
    EXIT.input,
    `${atLeast ? "over " : ""}${formatBytes(atLeast ? limit : size)}, too large to send inline (the limit is ${formatBytes(limit)}). ` +
      `Put the file at a public http(s) URL and pass that instead, e.g. \`ocr extract https://example.com/${name}\`: ` +
      "the service downloads files of up to 25 MB. ocr never uploads a file anywhere by itself.",
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
    throw new CliError(EXIT.other, `cannot create the output directory ${dir}: ${(error as NodeJS.ErrnoException).code ?? "error"}`);
  }
}

function asCliError(error: unknown): CliError {
  if (error instanceof CliError) return error;
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return new CliError(EXIT.other, code ? `${code}: ${message}` : message);
}

function withFinalNewline(text: string): string {
  return text.endsWith("\n") ? text : `${text}\n`;
}

function write(stream: NodeJS.WritableStream, text: string): Promise<void> {
  return new Promise((resolve, reject) => stream.write(text, (error) => (error ? reject(error) : resolve())));
}

function describeRetry(info: RetryInfo): string {
  return `${info.reason}; retrying in ${(info.delayMs / 1000).toFixed(1)} s (attempt ${info.attempt + 1})`;
}

function describeSuccess(result: { creditsUsed: number; confidence: number; processingTime: number; requestId?: string }, remaining: number | null, replayed: boolean, file?: string): string {
  const parts = [
    `${result.creditsUsed} credit${result.creditsUsed === 1 ? "" : "s"} used`,
    remaining === null ? undefined : `${remaining} remaining`,
    `confidence ${result.confidence.toFixed(1)}`,
    `${result.processingTime} ms`,
    replayed ? "replayed" : undefined,
    result.requestId,
    file ? `→ ${file}` : undefined,
  ];
  return parts.filter(Boolean).join(", ");
}
