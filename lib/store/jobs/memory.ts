import { RESERVATION_TTL_MS, TOMBSTONE_TTL_MS, reservationMember } from "../credits/port";
import { reservationKey, type MemoryBalances } from "../credits/memory";
import { ExpiringMap } from "../memory-support";
import { JOB_RECORD_KEEP_MS, indexScore } from "./common";
import { activeJobStatuses, type JobRecord, type JobStore, type PageOutcome } from "./port";

interface MemoryJob {
  record: JobRecord;
  pages: Map<number, string>;
  failed: Map<number, string>;
  score: number;
}

/** Jobs for one process (the development default), following the same rules as the Lua scripts (./scripts.ts). */
export function createMemoryJobStore(balances: MemoryBalances): JobStore {
  const jobs = new ExpiringMap<MemoryJob>();
  /** Results expire before the record: epoch ms per job. */
  const resultsExpire = new Map<string, number>();
  const indexes = new Map<string, Array<{ id: string; score: number }>>();
  const queued = new Map<string, number>();
  const sources = new ExpiringMap<Uint8Array>();
  /** Whose each stored file is, for the account's cap (entries go with their file). */
  const sourceOwners = new Map<string, { userId: string; bytes: number }>();
  /** What else each account keeps (renderings `r:…`, kept answers), counted against its cap with its files. */
  const keptBytes = new Map<string, Map<string, { bytes: number; expiresAt: number; drop?: () => void }>>();
  const storedBytes = (userId: string): { used: number; fixed: number; releasedAt: number | null } => {
    let used = 0;
    let releasedAt: number | null = null;
    for (const [jobId, owner] of sourceOwners) {
      const left = sources.remainingMs(jobId);
      if (left === undefined) {
        sourceOwners.delete(jobId);
        continue;
      }
      if (owner.userId !== userId) continue;
      used += owner.bytes;
      const at = Date.now() + left;
      if (releasedAt === null || at < releasedAt) releasedAt = at;
    }
    let fixed = used;
    for (const [name, entry] of keptBytes.get(userId) ?? []) {
      if (entry.expiresAt <= Date.now()) {
        keptBytes.get(userId)!.delete(name);
        continue;
      }
      used += entry.bytes;
      if (entry.drop) continue;
      fixed += entry.bytes;
      if (releasedAt === null || entry.expiresAt < releasedAt) releasedAt = entry.expiresAt;
    }
    return { used, fixed, releasedAt };
  };
  /** Room for `bytes` on the account (the renderings that expire first dropped for it), as the keepBytes script. */
  const makeRoom = (userId: string, bytes: number, maxAccountBytes: number) => {
    const { used, fixed, releasedAt } = storedBytes(userId);
    if (fixed + bytes > maxAccountBytes) return { ok: false as const, used: fixed, releasedAt };
    const droppable = [...(keptBytes.get(userId) ?? [])]
      .filter(([, entry]) => entry.drop)
      .sort(([, a], [, b]) => a.expiresAt - b.expiresAt);
    let total = used;
    for (const [name, entry] of droppable) {
      if (total + bytes <= maxAccountBytes) break;
      keptBytes.get(userId)!.delete(name);
      entry.drop!();
      total -= entry.bytes;
    }
    return { ok: true as const };
  };
  const countKept = (userId: string, name: string, entry: { bytes: number; expiresAt: number; drop?: () => void }) => {
    const account = keptBytes.get(userId) ?? new Map();
    account.set(name, entry);
    keptBytes.set(userId, account);
  };
  const renderings = new ExpiringMap<{ chunks: Uint8Array[]; bytes: number; info: string }>();

  const live = (jobId: string): MemoryJob | undefined => {
    const job = jobs.get(jobId);
    if (!job) return undefined;
    const until = resultsExpire.get(jobId);
    if (until !== undefined && until <= Date.now()) {
      job.pages.clear();
      job.failed.clear();
      resultsExpire.delete(jobId);
    }
    return job;
  };
  const lowerQueued = (userId: string, pages: number) =>
    queued.set(userId, Math.max(0, (queued.get(userId) ?? 0) - pages));

  const INACTIVE: PageOutcome = { stored: 0, duplicates: 0, inactive: true, last: false };
  const activeJob = (jobId: string, now: number): MemoryJob | undefined => {
    const job = live(jobId);
    if (!job || !activeJobStatuses.includes(job.record.status)) return undefined;
    if (job.record.status === "queued") Object.assign(job.record, { status: "running", startedAt: now });
    return job;
  };
  const isLast = (r: JobRecord) => r.pagesDone + r.pagesFailed >= r.pagesTotal;

  return {
    async createJob(job, { entry, day, maxQueuedPages, ttlMs }) {
      const reservation = reservationKey(job.userId, job.id);
      if (jobs.get(job.id) || balances.reservations.get(reservation) !== undefined)
        return { ok: false, reason: "duplicate" };
      const waiting = queued.get(job.userId) ?? 0;
      if (waiting + job.pagesTotal > maxQueuedPages) return { ok: false, reason: "queue_full", queued: waiting };
      const balance = balances.get(job.userId);
      if (balance < job.pagesTotal) return { ok: false, reason: "insufficient_credits", balance };
      const after = balances.change(job.userId, -job.pagesTotal, entry, job.pagesTotal);
      balances.addUsage(job.userId, day, job.pagesTotal);
      balances.reservations.set(reservation, job.pagesTotal, RESERVATION_TTL_MS);
      balances.openReservations.set(reservationMember(job.userId, job.id), job.deadline);
      const record: JobRecord = {
        ...job,
        status: "queued",
        pagesDone: 0,
        pagesFailed: 0,
        creditsUsed: 0,
        creditsRefunded: 0,
      };
      const score = indexScore(job.createdAt, job.id);
      jobs.set(
        job.id,
        { record, pages: new Map(), failed: new Map(), score },
        job.deadline + ttlMs + JOB_RECORD_KEEP_MS - Date.now(),
      );
      // The file takes the job's lifetime (it was stored with a short one).
      sources.expire(job.id, job.expiresAt - Date.now());
      const index = indexes.get(job.userId) ?? [];
      index.push({ id: job.id, score });
      index.sort((a, b) => b.score - a.score);
      indexes.set(job.userId, index.slice(0, 1000));
      queued.set(job.userId, waiting + job.pagesTotal);
      return { ok: true, balance: after };
    },

    async startJob(jobId, now) {
      const job = live(jobId);
      if (job?.record.status !== "queued") return false;
      Object.assign(job.record, { status: "running", startedAt: now });
      return true;
    },

    async getJob(jobId) {
      const job = live(jobId);
      return job ? { ...job.record } : null;
    },

    async listJobs(userId, { limit, cursor }) {
      const before = cursor && /^\d+$/.test(cursor) ? Number(cursor) : Infinity;
      const index = (indexes.get(userId) ?? []).filter((entry) => jobs.get(entry.id) !== undefined);
      indexes.set(userId, index);
      const slice = index.filter((entry) => entry.score < before).slice(0, limit);
      return {
        jobs: slice.map((entry) => ({ ...jobs.get(entry.id)!.record })),
        nextCursor: slice.length === limit ? String(slice[slice.length - 1]!.score) : null,
      };
    },

    async storePages(jobId, pages, now) {
      const job = activeJob(jobId, now);
      if (!job) return INACTIVE;
      const { record } = job;
      const key = reservationKey(record.userId, record.id);
      const outcome: PageOutcome = { stored: 0, duplicates: 0, inactive: false, last: false };
      for (const { page, payload } of pages) {
        if (job.pages.has(page) || job.failed.has(page)) {
          outcome.duplicates++;
          continue;
        }
        const outstanding = balances.reservations.get(key);
        if (typeof outstanding !== "number" || outstanding < 1) {
          outcome.inactive = true;
          break;
        }
        balances.reservations.set(key, outstanding - 1, RESERVATION_TTL_MS);
        job.pages.set(page, payload);
        outcome.stored++;
      }
      record.creditsUsed += outcome.stored;
      record.pagesDone += outcome.stored;
      lowerQueued(record.userId, outcome.stored);
      outcome.last = isLast(record);
      return outcome;
    },

    async failPage(jobId, page, failure, now) {
      const job = live(jobId);
      if (!job || !activeJobStatuses.includes(job.record.status)) return INACTIVE;
      if (job.pages.has(page) || job.failed.has(page))
        return { stored: 0, duplicates: 1, inactive: false, last: false };
      activeJob(jobId, now);
      job.failed.set(page, failure);
      job.record.pagesFailed++;
      lowerQueued(job.record.userId, 1);
      return { stored: 1, duplicates: 0, inactive: false, last: isLast(job.record) };
    },

    async storeAndEnd(jobId, _owner, pages, input) {
      const outcome = await this.storePages(jobId, pages, input.now);
      return { outcome, ended: await this.endJob(jobId, input) };
    },

    async endJob(jobId, { end, error, now, resultTtlMs, entry, day }) {
      const job = live(jobId);
      if (!job || !activeJobStatuses.includes(job.record.status)) return null;
      const { record } = job;
      lowerQueued(record.userId, record.pagesTotal - record.pagesDone - record.pagesFailed);
      const key = reservationKey(record.userId, jobId);
      const outstanding = balances.reservations.get(key);
      const refund = typeof outstanding === "number" ? outstanding : 0;
      balances.reservations.set(key, "closed", TOMBSTONE_TTL_MS);
      balances.openReservations.delete(reservationMember(record.userId, jobId));
      if (refund > 0) {
        balances.change(record.userId, refund, entry, refund);
        balances.addUsage(record.userId, day, -refund);
      }
      const status = end === "cancel" ? "cancelled" : end === "fail" || record.pagesDone === 0 ? "failed" : "succeeded";
      const expiresAt = now + resultTtlMs;
      // Nothing left here: the sweeper refunded it at the deadline, or every page was charged (see endJobScript).
      const shown = refund > 0 ? refund : Math.max(0, record.creditsReserved - record.creditsUsed);
      Object.assign(record, { status, finishedAt: now, expiresAt, creditsRefunded: shown, ...(error && { error }) });
      if (status !== "succeeded") sources.delete(jobId);
      else sources.expire(jobId, expiresAt - Date.now());
      resultsExpire.set(jobId, expiresAt);
      jobs.expire(jobId, expiresAt + JOB_RECORD_KEEP_MS - Date.now());
      return { status, refunded: refund };
    },

    async getPages(jobId, pages) {
      const job = live(jobId);
      return pages.map((page) => job?.pages.get(page) ?? null);
    },

    async getFailedPages(jobId) {
      return new Map(live(jobId)?.failed ?? []);
    },

    async listDonePages(jobId) {
      return [...(live(jobId)?.pages.keys() ?? [])].sort((a, b) => a - b);
    },

    async putSource(jobId, bytes, { chunkBytes, pendingTtlMs, userId, maxAccountBytes }) {
      const room = makeRoom(userId, bytes.byteLength, maxAccountBytes);
      if (!room.ok) return room;
      sources.set(jobId, bytes, pendingTtlMs);
      sourceOwners.set(jobId, { userId, bytes: bytes.byteLength });
      return { ok: true, chunks: Math.max(1, Math.ceil(bytes.byteLength / chunkBytes)) };
    },

    async getSource(jobId) {
      return sources.get(jobId) ?? null;
    },

    async putRendering(jobId, variant, bytes, { chunkBytes, ttlMs, info, userId, maxAccountBytes }) {
      const name = `${jobId}:${variant}`;
      keptBytes.get(userId)?.delete(`r:${name}`);
      if (!makeRoom(userId, bytes.byteLength, maxAccountBytes).ok) return false;
      const chunks: Uint8Array[] = [];
      for (let offset = 0; offset < Math.max(1, bytes.byteLength); offset += chunkBytes)
        chunks.push(bytes.slice(offset, offset + chunkBytes));
      renderings.set(name, { chunks, bytes: bytes.byteLength, info }, ttlMs);
      countKept(userId, `r:${name}`, {
        bytes: bytes.byteLength,
        expiresAt: Date.now() + ttlMs,
        drop: () => renderings.delete(name),
      });
      return true;
    },

    async keepBytes(userId, { name, bytes, ttlMs, maxAccountBytes }) {
      const room = makeRoom(userId, bytes, maxAccountBytes);
      if (!room.ok) return room;
      countKept(userId, name, { bytes, expiresAt: Date.now() + ttlMs });
      return { ok: true };
    },

    async getRenderingInfo(jobId, variant) {
      const kept = renderings.get(`${jobId}:${variant}`);
      return kept ? { chunks: kept.chunks.length, bytes: kept.bytes, info: kept.info } : null;
    },

    async getRenderingChunk(jobId, variant, chunk) {
      return renderings.get(`${jobId}:${variant}`)?.chunks[chunk] ?? null;
    },

    async deleteSource(jobId) {
      sources.delete(jobId);
      sourceOwners.delete(jobId);
    },
  };
}
