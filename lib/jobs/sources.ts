import type { JobRecord, JobStore } from "@/lib/store";
import type { EngineDocument } from "@/lib/ocr";

interface Cached {
  document: Promise<EngineDocument>;
  bytes: number;
  lastUsed: number;
}

/**
 * Each process reads a job's file from the store once and keeps it while it reads the job's pages (the engine
 * processes hold it too, by its `docId`): the file is not copied per page. Least recently used files go when
 * the cache passes `limitBytes` (docs/decisions.md#job-source).
 */
export class SourceCache {
  private readonly entries = new Map<string, Cached>();

  constructor(
    private readonly store: () => JobStore,
    private readonly limitBytes: number,
  ) {}

  get(record: Pick<JobRecord, "id" | "sourceChunks" | "fileType" | "bytes">): Promise<EngineDocument> {
    const cached = this.entries.get(record.id);
    if (cached) {
      cached.lastUsed = Date.now();
      return cached.document;
    }
    const document = this.store()
      .getSource(record.id, record.sourceChunks)
      .then((bytes) => {
        if (!bytes) throw new SourceGoneError(record.id);
        return { docId: jobDocId(record.id), bytes, type: record.fileType };
      });
    document.catch(() => this.entries.delete(record.id));
    this.entries.set(record.id, { document, bytes: record.bytes, lastUsed: Date.now() });
    this.trim(record.id);
    return document;
  }

  drop(jobId: string): void {
    this.entries.delete(jobId);
  }

  private trim(keep: string): void {
    let total = 0;
    for (const entry of this.entries.values()) total += entry.bytes;
    const oldest = [...this.entries].filter(([id]) => id !== keep).sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [id, entry] of oldest) {
      if (total <= this.limitBytes) break;
      this.entries.delete(id);
      total -= entry.bytes;
    }
  }
}

/** The name a job's document has in the engine processes. */
export function jobDocId(jobId: string): string {
  return `src_${jobId}`;
}

export class SourceGoneError extends Error {
  constructor(jobId: string) {
    super(`the source file of ${jobId} is gone from the store`);
    this.name = "SourceGoneError";
  }
}
