import { createHash } from "node:crypto";
import type { JobResultBody } from "@/lib/api/schemas";
import { ApiError } from "@/lib/api/errors";
import type { Env } from "@/lib/env";
import { documentConfidence, pagedFormats, renderSearchablePdf } from "@/lib/ocr";
import { formatPageRanges, isOcrError, parsePageSelection, type ExtractedPage } from "@/lib/ocr/model";
import { fromEngineError } from "./engine-errors";
import type { JobRecord, Store } from "@/lib/store";
import { decodePage } from "./payload";
import { findJob, findReadableJob } from "./service";
import { jobSettings } from "./settings";
import type { OutputFormat, TextFormat } from "@/lib/vocabulary";
import type { DeliveryQueue } from "@/lib/webhooks";

/**
 * The most bytes of `extractedText` (as escaped in the JSON answer) one result response carries: the answer stays
 * under Vercel's 4.5 MB response limit with its other fields. A result larger than this comes in parts (`next`).
 */
export const RESULT_PART_BYTES = 4_000_000;

/** Pages fetched from the store at a time while a part is filled. */
const FETCH_BATCH = 25;

export type JobResultPart = JobResultBody;

/**
 * A job's result, rendered from the stored page models in `format` (default: the job's), for the pages asked
 * (default: all of the job's), as many as fit in one response from the first; the rest is named by `next`.
 * Pages not read yet or failed are listed in `missingPages`, so a running job's first pages can be fetched already.
 */
export async function readJobResult(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  jobId: string,
  options: { format?: OutputFormat; pages?: string; limitBytes?: number },
): Promise<JobResultPart> {
  const record = await findReadableJob(store, env, deliveries, userId, jobId);
  const wanted = checkTextRequest(record, options);
  if (!isJobEnded(record)) return renderResultPart(store, record, wanted, options);
  // An ended job's part is the same at every read: read once from the store (and shared by the reads in flight here:
  // a batch of 30 `tasks/result` parses it once).
  const variant = textVariant(record, wanted, options);
  const cap = jobSettings({}, env).maxAccountBytes;
  return singleFlight(`part:${jobId}:${variant}`, async () => {
    const render = async () => {
      const part = await renderResultPart(store, record, wanted, options);
      return { bytes: Buffer.from(JSON.stringify(part)), info: part.next ?? "" };
    };
    const kept = await keepRendering(store, record, variant, cap, render);
    // Gone between its record and its chunks (dropped for the account's newer renderings): made again, not kept.
    const bytes = (await renderingBytes(store, jobId, variant, kept)) ?? (await rendering(record.userId, render)).bytes;
    return JSON.parse(Buffer.from(bytes).toString("utf8")) as JobResultPart;
  });
}

/**
 * `readJobResult` as the REST answer's body: the part's JSON, streamed from the store for an ended job (rendered once,
 * at its first read, and kept beside its pages until they expire), and its `next` link.
 */
export async function readJobResultBody(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  jobId: string,
  options: { format?: OutputFormat; pages?: string; limitBytes?: number },
): Promise<{ body: ReadableStream<Uint8Array>; bytes: number; next: string | null }> {
  const record = await findJob(store, env, deliveries, userId, jobId);
  const wanted = checkTextRequest(record, options);
  if (!isJobEnded(record)) {
    const part = await rendering(record.userId, () => renderResultPart(store, record, wanted, options));
    const bytes = Buffer.from(JSON.stringify(part));
    return {
      body: streamOf(store, { bytes, chunks: 1, info: "", size: bytes.byteLength }, jobId, ""),
      bytes: bytes.byteLength,
      next: part.next,
    };
  }
  const variant = textVariant(record, wanted, options);
  const cap = jobSettings({}, env).maxAccountBytes;
  const kept = await singleFlight(`kept:${jobId}:${variant}`, () =>
    keepRendering(store, record, variant, cap, async () => {
      const part = await renderResultPart(store, record, wanted, options);
      return { bytes: Buffer.from(JSON.stringify(part)), info: part.next ?? "" };
    }),
  );
  return { body: streamOf(store, kept, jobId, variant), bytes: kept.size, next: kept.info || null };
}

function checkTextRequest(record: JobRecord, options: { format?: OutputFormat; pages?: string }): number[] {
  const format = options.format ?? record.format;
  if (format === "pdf") {
    throw new ApiError(
      "invalid_request",
      `format: pdf is a file, not text: GET /api/ocr/jobs/${record.id}/result?format=pdf answers it as application/pdf`,
    );
  }
  return wantedPages(record, options.pages);
}

function textVariant(
  record: JobRecord,
  wanted: number[],
  options: { format?: OutputFormat; limitBytes?: number },
): string {
  return variantOf(
    `${options.format ?? record.format}|${formatPageRanges(wanted)}|${options.limitBytes ?? RESULT_PART_BYTES}`,
  );
}

/** A part rendered from the stored page models (what `readJobResult` answers). */
async function renderResultPart(
  store: Store,
  record: JobRecord,
  wanted: number[],
  options: { format?: OutputFormat; limitBytes?: number },
): Promise<JobResultPart> {
  const jobId = record.id;
  const format = (options.format ?? record.format) as Exclude<OutputFormat, "pdf">;

  const jobs = store.jobs;
  const failed = record.pagesFailed > 0 ? await jobs.getFailedPages(jobId) : new Map<number, string>();
  const limit = options.limitBytes ?? RESULT_PART_BYTES;
  const render = pagedFormats[format];
  const pieces: string[] = [];
  const included: ExtractedPage[] = [];
  const missing: JobResultPart["missingPages"] = [];
  let size = 0;
  let stoppedAt = wanted.length;
  fill: for (let start = 0; start < wanted.length; start += FETCH_BATCH) {
    const batch = wanted.slice(start, start + FETCH_BATCH);
    const payloads = await jobs.getPages(jobId, batch);
    for (const [offset, payload] of payloads.entries()) {
      const number = batch[offset]!;
      if (payload === null) {
        const failure = failed.get(number);
        missing.push(
          failure
            ? { page: number, status: "failed", code: failureCode(failure) }
            : { page: number, status: "pending" },
        );
        continue;
      }
      const stored = decodePage(payload);
      const piece = render.page(stored.page, format === "json" ? { readBy: stored.readBy } : undefined);
      const cost = Buffer.byteLength(JSON.stringify(piece)) + 8;
      // A part holds at least one page, however large.
      if (included.length > 0 && size + cost > limit) {
        stoppedAt = start + offset;
        break fill;
      }
      size += cost;
      pieces.push(piece);
      included.push(stored.page);
    }
  }
  const rest = wanted.slice(stoppedAt);
  const next =
    rest.length > 0
      ? `/api/ocr/jobs/${jobId}/result?${new URLSearchParams({ format, pages: formatPageRanges(rest) })}`
      : null;
  return {
    success: true,
    jobId,
    status: record.status,
    format,
    pages: formatPageRanges(included.map((page) => page.number)),
    extractedText: render.join(pieces),
    confidence: documentConfidence({ pages: included, pageCount: record.pageCount }),
    pageCount: record.pageCount,
    missingPages: missing,
    next,
  };
}

/** The job's pages a result asks for: `pages` (within what the job read), or all of them. */
function wantedPages(record: JobRecord, pages: string | undefined): number[] {
  const selected = parsePageSelection(record.selection, record.pageCount);
  if (pages === undefined || pages.trim() === "") return selected;
  let wanted: number[];
  try {
    wanted = parsePageSelection(pages, record.pageCount);
  } catch (error) {
    throw new ApiError("invalid_request", `pages: ${isOcrError(error) ? error.message : "not a page list like 1-3,5"}`);
  }
  const inJob = new Set(selected);
  const outside = wanted.filter((page) => !inJob.has(page));
  if (outside.length > 0) {
    throw new ApiError(
      "invalid_request",
      `pages: page ${outside[0]} was not read by this job (it read ${record.selection})`,
    );
  }
  return wanted;
}

/** The format a result request gets: the one asked for, or the job's. */
export async function jobResultFormat(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  jobId: string,
  format: OutputFormat | undefined,
): Promise<OutputFormat> {
  return format ?? (await findJob(store, env, deliveries, userId, jobId)).format;
}

export interface JobPdf {
  /** The file, streamed (from the store once it is kept). */
  body: ReadableStream<Uint8Array>;
  /** Its size in bytes. */
  bytes: number;
  /** Pages in it, as a page list. */
  pages: string;
  /** Pages asked for but not in it: not read yet, or failed. */
  missingPages: number[];
}

/**
 * A job's searchable PDF, built from its source file (kept until its results expire) and the stored page models of
 * the pages asked for (default: all of the job's) that have been read; the others are listed in `missingPages`. One
 * file, however large: the route streams it.
 */
export async function readJobPdf(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  jobId: string,
  options: { pages?: string },
): Promise<JobPdf> {
  const record = await findJob(store, env, deliveries, userId, jobId);
  const wanted = wantedPages(record, options.pages);
  const jobs = store.jobs;
  const pages: ExtractedPage[] = [];
  const missingPages: number[] = [];
  for (let start = 0; start < wanted.length; start += FETCH_BATCH) {
    const batch = wanted.slice(start, start + FETCH_BATCH);
    const payloads = await jobs.getPages(jobId, batch);
    payloads.forEach((payload, offset) => {
      if (payload === null) missingPages.push(batch[offset]!);
      else pages.push(decodePage(payload).page);
    });
  }
  if (pages.length === 0) {
    throw new ApiError(
      "conflict",
      record.status === "queued" || record.status === "running"
        ? `No page of job ${jobId} is read yet: the PDF holds the pages read, ask again when some are (GET /api/ocr/jobs/${jobId})`
        : `Job ${jobId} read none of the pages asked for: there is no PDF to make`,
    );
  }
  const render = async () => {
    // A document read in its request keeps no file (lib/jobs/inline.ts).
    const bytes = record.sourceChunks > 0 ? await jobs.getSource(jobId, record.sourceChunks) : null;
    if (!bytes) {
      throw new ApiError(
        "gone",
        record.sourceChunks > 0
          ? `The file of job ${jobId} is no longer kept (the job ${record.status}): its PDF cannot be made; the text formats still can`
          : `Job ${jobId} was read in its request, which keeps no file: its PDF cannot be made; the text formats can`,
      );
    }
    try {
      return { bytes: await renderSearchablePdf(pages, { bytes, type: record.fileType }), info: "" };
    } catch (error) {
      throw fromEngineError(error);
    }
  };
  const done = { pages: formatPageRanges(pages.map((page) => page.number)), missingPages };
  if (!isJobEnded(record)) {
    const { bytes } = await rendering(record.userId, render);
    return {
      ...done,
      bytes: bytes.byteLength,
      body: streamOf(store, { bytes, chunks: 1, info: "", size: bytes.byteLength }, jobId, ""),
    };
  }
  // An ended job's PDF is the same at every read: made once (one making for the reads in flight here) and kept in the
  // store beside its pages; every read streams it from there.
  const variant = variantOf(`pdf|${done.pages}`);
  const cap = jobSettings({}, env).maxAccountBytes;
  const kept = await singleFlight(`kept:${jobId}:${variant}`, () => keepRendering(store, record, variant, cap, render));
  return { ...done, bytes: kept.size, body: streamOf(store, kept, jobId, variant) };
}

/** Whether a job has ended: its results no longer change, so what is rendered from them can be kept. */
function isJobEnded(record: JobRecord): boolean {
  return record.status !== "queued" && record.status !== "running";
}

function variantOf(description: string): string {
  return createHash("sha256").update(description).digest("base64url").slice(0, 22);
}

/** A rendering: in memory when it was just made, else in the store's chunks. */
interface Kept {
  bytes?: Uint8Array;
  chunks: number;
  size: number;
  info: string;
}

/** Rendering chunks kept in the store (the size of a job's source chunks: one value per Upstash request). */
const RENDER_CHUNK_BYTES = 1024 * 1024;

/**
 * The kept rendering of `variant`, made when there is none and kept until the job's results expire, counted against
 * the account's cap (`maxAccountBytes`, with its job files and kept answers: docs/decisions.md, "What an account keeps
 * counts against its cap"). Past the cap the account's renderings that expire first are dropped for it; when its files
 * and kept answers leave no room, it is answered from memory and not kept.
 */
async function keepRendering(
  store: Store,
  record: JobRecord,
  variant: string,
  maxAccountBytes: number,
  render: () => Promise<{ bytes: Uint8Array; info: string }>,
): Promise<Kept> {
  const jobs = store.jobs;
  const info = await jobs.getRenderingInfo(record.id, variant);
  if (info) return { chunks: info.chunks, size: info.bytes, info: info.info };
  const made = await rendering(record.userId, render);
  const ttlMs = record.expiresAt - Date.now();
  if (ttlMs > 1_000) {
    await jobs
      .putRendering(record.id, variant, made.bytes, {
        chunkBytes: RENDER_CHUNK_BYTES,
        ttlMs,
        info: made.info,
        userId: record.userId,
        maxAccountBytes,
      })
      .catch((error: unknown) => {
        console.warn(
          `[jobs] a rendered result could not be kept (${error instanceof Error ? error.message : "error"})`,
        );
        return false;
      });
  }
  return {
    bytes: made.bytes,
    chunks: Math.max(1, Math.ceil(made.bytes.byteLength / RENDER_CHUNK_BYTES)),
    size: made.bytes.byteLength,
    info: made.info,
  };
}

/** A kept rendering's bytes; null when a chunk is gone (dropped for the account's newer renderings, or expired). */
async function renderingBytes(store: Store, jobId: string, variant: string, kept: Kept): Promise<Uint8Array | null> {
  if (kept.bytes) return kept.bytes;
  const parts: Uint8Array[] = [];
  for (let chunk = 0; chunk < kept.chunks; chunk++) {
    const part = await store.jobs.getRenderingChunk(jobId, variant, chunk);
    if (!part) return null;
    parts.push(part);
  }
  return Buffer.concat(parts);
}

/**
 * Renderings one account has in flight in this process at once; the others wait their turn. A rendering holds the
 * job's pages and what it makes in memory (a searchable PDF also the job's file, and pdf-lib's copy of it), and a
 * searchable PDF is made on the main thread: an account asking for many page subsets at once (or a batch of
 * `tasks/result`) is read one after another, not all together (issue 39 point 14).
 */
export const RENDERINGS_PER_ACCOUNT = 1;

const renderingTurns = new Map<string, { running: number; waiting: Array<() => void> }>();

/** Run `work` (a rendering of `userId`'s) when the account has fewer than `RENDERINGS_PER_ACCOUNT` running here. */
async function rendering<T>(userId: string, work: () => Promise<T>): Promise<T> {
  let turns = renderingTurns.get(userId);
  if (!turns) {
    turns = { running: 0, waiting: [] };
    renderingTurns.set(userId, turns);
  }
  const mine = turns;
  if (mine.running >= RENDERINGS_PER_ACCOUNT) await new Promise<void>((resolve) => mine.waiting.push(resolve));
  else mine.running++;
  try {
    return await work();
  } finally {
    const next = mine.waiting.shift();
    if (next) next();
    else if (--mine.running === 0) renderingTurns.delete(userId);
  }
}

async function readChunk(store: Store, jobId: string, variant: string, chunk: number): Promise<Uint8Array> {
  const part = await store.jobs.getRenderingChunk(jobId, variant, chunk);
  if (!part) throw new ApiError("gone", `The result of job ${jobId} is no longer kept`);
  return part;
}

/** A rendering as a body: the bytes in memory a piece at a time, or the store's chunks one after another. */
function streamOf(store: Store, kept: Kept, jobId: string, variant: string): ReadableStream<Uint8Array> {
  let chunk = 0;
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (kept.bytes) {
        if (offset >= kept.bytes.byteLength) return controller.close();
        controller.enqueue(kept.bytes.subarray(offset, offset + STREAM_PIECE_BYTES));
        offset += STREAM_PIECE_BYTES;
        return;
      }
      if (chunk >= kept.chunks) return controller.close();
      controller.enqueue(await readChunk(store, jobId, variant, chunk++));
    },
  });
}

/** Pieces a body in memory goes out in (a stream, not one body). */
const STREAM_PIECE_BYTES = 256 * 1024;

const flights = new Map<string, Promise<unknown>>();

/** One run of `work` per key among the calls in flight in this process; the later ones share its outcome. */
function singleFlight<T>(key: string, work: () => Promise<T>): Promise<T> {
  const running = flights.get(key);
  if (running) return running as Promise<T>;
  const started = work().finally(() => flights.delete(key));
  flights.set(key, started);
  return started;
}

function failureCode(raw: string): string {
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed === "object" && parsed !== null && "code" in parsed && typeof parsed.code === "string")
      return parsed.code;
  } catch {
    // fall through
  }
  return "internal_error";
}

/**
 * What a text format puts before a job's first page, between two pages and after the last: the settings page's
 * download joins a result's parts with it (each part carries its own head and tail).
 */
export function jobResultFrame(format: TextFormat): { head: string; separator: string; tail: string } {
  const { head, separator, tail } = pagedFormats[format];
  return { head, separator, tail };
}
