import { z } from "zod";
import { RESERVATION_TTL_MS, TOMBSTONE_TTL_MS, reservationMember } from "../credits/port";
import { fixedFields } from "../credits/redis";
import { call, flatHash, integer, integerPair, type RedisContext } from "../redis-support";
import { JOB_RECORD_KEEP_MS, indexScore, jobFields, parseJobRecord } from "./common";
import type { EndedJob, EndJobInput, JobStore, PageOutcome } from "./port";
import {
  createJobScript,
  endJobScript,
  failPageScript,
  keepBytesScript,
  startJobScript,
  storePagesScript,
} from "./scripts";

const outcomeReply = z
  .tuple([integer, integer, integer, integer])
  .transform(([stored, duplicates, inactive, last]): PageOutcome => ({
    stored,
    duplicates,
    inactive: inactive === 1,
    last: last === 1,
  }));
const INACTIVE: PageOutcome = { stored: 0, duplicates: 0, inactive: true, last: false };

/** The endJob script's reply: null when the job was not active. */
function endedReply(reply: unknown): EndedJob | null {
  const [ended, refunded, status] = z.tuple([integer, integer, z.string()]).parse(reply);
  if (ended !== 1) return null;
  return { status: z.enum(["succeeded", "failed", "cancelled"]).parse(status), refunded };
}

/** Jobs on Redis: each change of a job's counters and of its credits is one Lua script (./scripts.ts). */
const renderingInfoSchema = z.object({
  chunks: z.number().int().min(1),
  bytes: z.number().int().min(0),
  info: z.string(),
});

export function createRedisJobStore({ redis, binary, key }: RedisContext): JobStore {
  const scripts = {
    createJob: redis.createScript<unknown>(createJobScript),
    startJob: redis.createScript<unknown>(startJobScript),
    storePages: redis.createScript<unknown>(storePagesScript),
    failPage: redis.createScript<unknown>(failPageScript),
    endJob: redis.createScript<unknown>(endJobScript),
    keepBytes: redis.createScript<unknown>(keepBytesScript),
  };
  const chunkKeys = (jobId: string, chunks: number) =>
    Array.from({ length: chunks }, (_, chunk) => key.jobSource(jobId, chunk));
  const deleteSource: JobStore["deleteSource"] = async (jobId, chunks, owner) => {
    const keys = chunkKeys(jobId, chunks);
    if (keys.length > 0) await call("deleteSource", () => redis.del(...keys));
    if (owner)
      await call("deleteSource", () => redis.zrem(key.jobSourceBytes(owner.userId), sourceMember(jobId, owner.bytes)));
  };
  /** Delete kept renderings (members of an account's kept-bytes set, as the keepBytes script drops them). */
  const dropRenderings = async (members: string[]) => {
    const keys = members.flatMap((member) => {
      const parsed = parseRenderingMember(member);
      if (!parsed) return [];
      return [
        key.jobRendering(parsed.jobId, parsed.variant),
        ...Array.from({ length: parsed.chunks }, (_, chunk) =>
          key.jobRenderingChunk(parsed.jobId, parsed.variant, chunk),
        ),
      ];
    });
    if (keys.length > 0) await call("dropRenderings", () => redis.del(...keys));
  };
  /** Count `member` (its `bytes`) against the account's cap (./scripts.ts keepBytes); the renderings it displaced go. */
  const keepBytes = async (
    userId: string,
    member: string,
    bytes: number,
    { ttlMs, maxAccountBytes }: { ttlMs: number; maxAccountBytes: number },
  ): Promise<{ ok: true } | { ok: false; used: number; releasedAt: number | null }> => {
    const now = Date.now();
    const reply = await call("keepBytes", () =>
      scripts.keepBytes.exec(
        [key.jobSourceBytes(userId)],
        [String(now), member, String(bytes), String(maxAccountBytes), String(now + ttlMs)],
      ),
    );
    const [stored, used, first, ...dropped] = z
      .tuple([integer, integer, integer])
      .rest(z.union([z.string(), z.number()]).transform(String))
      .parse(reply);
    if (stored !== 1) return { ok: false, used, releasedAt: first >= 0 ? first : null };
    // Deleted after they stopped counting: a failure here leaves them to expire with their job's results.
    if (dropped.length > 0) await dropRenderings(dropped).catch(() => undefined);
    return { ok: true };
  };
  const pageKeys = (jobId: string, userId: string) => [
    key.job(jobId),
    key.jobPages(jobId),
    key.jobFailed(jobId),
    key.reservation(userId, jobId),
    key.jobsQueued(userId),
  ];
  /** The keys and arguments of the endJob script for a job of `owner`. */
  const endCall = (
    jobId: string,
    owner: { userId: string; sourceChunks: number },
    { end, error, now, resultTtlMs, entry, day }: EndJobInput,
  ): [string[], string[]] => {
    const expiresAt = now + resultTtlMs;
    return [
      [
        key.job(jobId),
        key.jobPages(jobId),
        key.jobFailed(jobId),
        key.credits(owner.userId),
        key.ledger(owner.userId),
        key.usage(owner.userId),
        key.reservation(owner.userId, jobId),
        key.openReservations(),
        key.jobsQueued(owner.userId),
        key.jobSourceBytes(owner.userId),
        ...chunkKeys(jobId, owner.sourceChunks),
      ],
      [
        end,
        error ?? "",
        String(now),
        String(expiresAt),
        fixedFields(entry),
        day,
        String(TOMBSTONE_TTL_MS),
        reservationMember(owner.userId, jobId),
        String(expiresAt + JOB_RECORD_KEEP_MS),
      ],
    ];
  };
  /** The page scripts need the account's keys: the job's owner, read once per job (ids never change owner). */
  const owners = new Map<string, string>();
  const ownerOf = async (jobId: string): Promise<string | null> => {
    const known = owners.get(jobId);
    if (known) return known;
    const reply = await call("getJobOwner", () => redis.hget(key.job(jobId), "userId"));
    if (typeof reply !== "string") return null;
    if (owners.size > 10_000) owners.clear();
    owners.set(jobId, reply);
    return reply;
  };

  const pageStep = async (
    jobId: string,
    operation: string,
    run: (keys: string[]) => Promise<unknown>,
  ): Promise<PageOutcome> => {
    const userId = await ownerOf(jobId);
    if (!userId) return INACTIVE;
    return outcomeReply.parse(await call(operation, () => run(pageKeys(jobId, userId))));
  };

  return {
    async createJob(job, { entry, day, maxQueuedPages, ttlMs }) {
      const reply = await call("createJob", () =>
        scripts.createJob.exec(
          [
            key.job(job.id),
            key.jobs(job.userId),
            key.jobsQueued(job.userId),
            key.credits(job.userId),
            key.ledger(job.userId),
            key.usage(job.userId),
            key.reservation(job.userId, job.id),
            key.openReservations(),
            key.jobSourceBytes(job.userId),
            ...chunkKeys(job.id, job.sourceChunks),
          ],
          [
            String(job.pagesTotal),
            String(maxQueuedPages),
            fixedFields(entry),
            day,
            String(RESERVATION_TTL_MS),
            String(job.deadline),
            reservationMember(job.userId, job.id),
            String(indexScore(job.createdAt, job.id)),
            job.id,
            String(job.deadline + ttlMs + JOB_RECORD_KEEP_MS),
            ...jobFields(job),
          ],
        ),
      );
      const [code, value] = integerPair.parse(reply);
      if (code === 1) {
        owners.set(job.id, job.userId);
        return { ok: true, balance: value };
      }
      if (code === 0) return { ok: false, reason: "insufficient_credits", balance: value };
      if (code === -1) return { ok: false, reason: "queue_full", queued: value };
      return { ok: false, reason: "duplicate" };
    },

    async startJob(jobId, now) {
      const reply = await call("startJob", () => scripts.startJob.exec([key.job(jobId)], [String(now)]));
      return integer.parse(reply) === 1;
    },

    async getJob(jobId) {
      const reply = await call("getJob", () => redis.hgetall(key.job(jobId)));
      if (reply === null) return null;
      const fields = Array.isArray(reply) ? flatHash.parse(reply) : z.record(z.string(), z.unknown()).parse(reply);
      return Object.keys(fields).length === 0 ? null : parseJobRecord(fields);
    },

    async listJobs(userId, { limit, cursor }) {
      const max: `(${number}` | "+inf" = cursor && /^\d+$/.test(cursor) ? `(${Number(cursor)}` : "+inf";
      const reply = await call("listJobs", () =>
        redis.zrange(key.jobs(userId), max, "-inf", {
          byScore: true,
          rev: true,
          offset: 0,
          count: limit,
          withScores: true,
        }),
      );
      const flat = z.array(z.union([z.string(), z.number()])).parse(reply);
      const ids: Array<{ id: string; score: string }> = [];
      for (let i = 0; i + 1 < flat.length; i += 2) ids.push({ id: String(flat[i]), score: String(flat[i + 1]) });
      if (ids.length === 0) return { jobs: [], nextCursor: null };
      const pipeline = redis.pipeline();
      for (const { id } of ids) pipeline.hgetall(key.job(id));
      const records = await call("listJobs", () => pipeline.exec<unknown[]>());
      const jobs = [];
      const gone: string[] = [];
      for (const [index, raw] of records.entries()) {
        const fields =
          raw === null ? {} : Array.isArray(raw) ? flatHash.parse(raw) : z.record(z.string(), z.unknown()).parse(raw);
        if (Object.keys(fields).length === 0) gone.push(ids[index]!.id);
        else jobs.push(parseJobRecord(fields));
      }
      if (gone.length > 0) await call("listJobs", () => redis.zrem(key.jobs(userId), ...gone)).catch(() => undefined);
      const last = ids[ids.length - 1]!;
      return { jobs, nextCursor: ids.length === limit ? BigInt(Math.round(Number(last.score))).toString() : null };
    },

    async storePages(jobId, pages, now) {
      if (pages.length === 0) return { stored: 0, duplicates: 0, inactive: false, last: false };
      return pageStep(jobId, "storePages", (keys) =>
        scripts.storePages.exec(keys, [String(now), ...pages.flatMap(({ page, payload }) => [String(page), payload])]),
      );
    },

    async failPage(jobId, page, failure, now) {
      return pageStep(jobId, "failPage", (keys) => scripts.failPage.exec(keys, [String(now), String(page), failure]));
    },

    async endJob(jobId, input) {
      const record = await this.getJob(jobId);
      if (!record) return null;
      const [keys, args] = endCall(jobId, record, input);
      return endedReply(await call("endJob", () => scripts.endJob.exec(keys, args)));
    },

    async storeAndEnd(jobId, owner, pages, input) {
      const [endKeys, endArgs] = endCall(jobId, owner, input);
      const storeArgs = [String(input.now), ...pages.flatMap(({ page, payload }) => [String(page), payload])];
      // EVAL, not EVALSHA: a script cache flushed meanwhile cannot make the end run without the pages before it.
      const replies = await call("storeAndEnd", () =>
        redis
          .pipeline()
          .eval(storePagesScript, pageKeys(jobId, owner.userId), storeArgs)
          .eval(endJobScript, endKeys, endArgs)
          .exec<[unknown, unknown]>(),
      );
      return { outcome: outcomeReply.parse(replies[0]), ended: endedReply(replies[1]) };
    },

    async getPages(jobId, pages) {
      if (pages.length === 0) return [];
      const reply = await call("getPages", () => redis.hmget(key.jobPages(jobId), ...pages.map(String)));
      // With automatic deserialization off, HMGET answers the raw RESP array.
      return z.array(z.string().nullable()).parse(reply ?? pages.map(() => null));
    },

    async getFailedPages(jobId) {
      const reply = await call("getFailedPages", () => redis.hgetall(key.jobFailed(jobId)));
      const fields =
        reply === null
          ? {}
          : Array.isArray(reply)
            ? flatHash.parse(reply)
            : z.record(z.string(), z.string()).parse(reply);
      return new Map(Object.entries(fields).map(([page, code]) => [Number(page), String(code)]));
    },

    async listDonePages(jobId) {
      const reply = await call("listDonePages", () => redis.hkeys(key.jobPages(jobId)));
      return z
        .array(z.union([z.string(), z.number()]))
        .parse(reply)
        .map(Number)
        .sort((a, b) => a - b);
    },

    async putSource(jobId, bytes, { chunkBytes, pendingTtlMs, userId, maxAccountBytes }) {
      const kept = await keepBytes(userId, sourceMember(jobId, bytes.byteLength), bytes.byteLength, {
        ttlMs: pendingTtlMs,
        maxAccountBytes,
      });
      if (!kept.ok) return kept;

      const chunks = Math.max(1, Math.ceil(bytes.byteLength / chunkBytes));
      let written = 0;
      try {
        for (let chunk = 0; chunk < chunks; chunk++) {
          const part = bytes.subarray(chunk * chunkBytes, Math.min(bytes.byteLength, (chunk + 1) * chunkBytes));
          const target = key.jobSource(jobId, chunk);
          // Counted before the write: a write that timed out may still have landed.
          written = chunk + 1;
          if (binary) {
            await call("putSource", () => binary.set(target, withRawMarker(part), pendingTtlMs));
          } else {
            await call("putSource", () =>
              redis.set(target, Buffer.from(part.buffer, part.byteOffset, part.byteLength).toString("base64"), {
                px: pendingTtlMs,
              }),
            );
          }
        }
      } catch (error) {
        // What was written goes now (DEL is allowed when Redis is out of memory); if even that fails, the chunks and
        // the count expire with their short pending lifetime.
        await deleteSource(jobId, written, { userId, bytes: bytes.byteLength }).catch(() => undefined);
        throw error;
      }
      return { ok: true, chunks };
    },

    async getSource(jobId, chunks) {
      const parts: Buffer[] = [];
      for (let chunk = 0; chunk < chunks; chunk++) {
        const target = key.jobSource(jobId, chunk);
        if (binary) {
          const reply = await call("getSource", () => binary.get(target));
          if (reply === null) return null;
          parts.push(fromStoredChunk(reply));
        } else {
          const reply = await call("getSource", () => redis.get(target));
          if (typeof reply !== "string") return null;
          parts.push(Buffer.from(reply, "base64"));
        }
      }
      // One copy of a file of up to 200 MB (Buffer.concat and then a Uint8Array made two), into an array of its own
      // that can be moved to a worker thread (a Buffer's cannot): lib/ocr/render/pdf-off-thread.ts.
      const whole = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
      let offset = 0;
      for (const part of parts) {
        whole.set(part, offset);
        offset += part.byteLength;
      }
      return whole;
    },

    deleteSource,

    async putRendering(jobId, variant, bytes, { chunkBytes, ttlMs, info, userId, maxAccountBytes }) {
      const chunks = Math.max(1, Math.ceil(bytes.byteLength / chunkBytes));
      const parts = Array.from({ length: chunks }, (_, chunk) =>
        Buffer.from(
          bytes.buffer,
          bytes.byteOffset + chunk * chunkBytes,
          Math.min(chunkBytes, bytes.byteLength - chunk * chunkBytes),
        ),
      );
      // What Redis holds: the bytes and a marker per chunk, or base64 text over Upstash's REST.
      const stored = parts.reduce(
        (sum, part) => sum + (binary ? part.byteLength + 1 : 4 * Math.ceil(part.byteLength / 3)),
        0,
      );
      const member = renderingMember(jobId, variant, chunks, stored);
      const kept = await keepBytes(userId, member, stored, { ttlMs, maxAccountBytes });
      if (!kept.ok) return false;
      try {
        for (const [chunk, part] of parts.entries()) {
          const target = key.jobRenderingChunk(jobId, variant, chunk);
          if (binary) await call("putRendering", () => binary.set(target, withRawMarker(part), ttlMs));
          else await call("putRendering", () => redis.set(target, part.toString("base64"), { px: ttlMs }));
        }
        const record = JSON.stringify({ chunks, bytes: bytes.byteLength, info });
        await call("putRendering", () => redis.set(key.jobRendering(jobId, variant), record, { px: ttlMs }));
      } catch (error) {
        await dropRenderings([member]).catch(() => undefined);
        await call("putRendering", () => redis.zrem(key.jobSourceBytes(userId), member)).catch(() => undefined);
        throw error;
      }
      return true;
    },

    async keepBytes(userId, { name, bytes, ttlMs, maxAccountBytes }) {
      return keepBytes(userId, `${name}:${bytes}`, bytes, { ttlMs, maxAccountBytes });
    },

    async getRenderingInfo(jobId, variant) {
      const reply = await call("getRenderingInfo", () => redis.get(key.jobRendering(jobId, variant)));
      if (typeof reply !== "string") return null;
      return renderingInfoSchema.parse(JSON.parse(reply));
    },

    async getRenderingChunk(jobId, variant, chunk) {
      const target = key.jobRenderingChunk(jobId, variant, chunk);
      if (binary) {
        const reply = await call("getRenderingChunk", () => binary.get(target));
        return reply === null ? null : new Uint8Array(fromStoredChunk(reply));
      }
      const reply = await call("getRenderingChunk", () => redis.get(target));
      return typeof reply === "string" ? new Uint8Array(Buffer.from(reply, "base64")) : null;
    },
  };
}

/** A kept rendering's member in its account's kept-bytes set: `r:`, where it is, and the bytes Redis holds for it. */
function renderingMember(jobId: string, variant: string, chunks: number, bytes: number): string {
  return `r:${jobId}:${variant}:${chunks}:${bytes}`;
}

function parseRenderingMember(member: string): { jobId: string; variant: string; chunks: number } | null {
  const match = /^r:(job_[A-Za-z0-9_-]+):([A-Za-z0-9_-]+):(\d+):\d+$/.exec(member);
  return match ? { jobId: match[1]!, variant: match[2]!, chunks: Number(match[3]) } : null;
}

/** A job file's member in its account's job-files set: the id and the size, which the scripts add up. */
function sourceMember(jobId: string, bytes: number): string {
  return `${jobId}:${bytes}`;
}

/**
 * A chunk stored as bytes starts with 0x00, which base64 text (what the REST store and earlier versions wrote) never
 * does: a reader tells the two apart without a field on the job.
 */
const RAW_MARKER = 0x00;

function withRawMarker(part: Uint8Array): Uint8Array {
  const out = new Uint8Array(part.byteLength + 1);
  out[0] = RAW_MARKER;
  out.set(part, 1);
  return out;
}

function fromStoredChunk(stored: Buffer): Buffer {
  return stored[0] === RAW_MARKER ? stored.subarray(1) : Buffer.from(stored.toString("latin1"), "base64");
}
