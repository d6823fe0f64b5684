import { z } from "zod";

/**
 * The store's marker: written when the service first uses a Redis, so that a Redis that came back empty (restarted
 * without persistence, flushed, evicting keys) can be told from a new one. lib/health/health.ts decides what it means.
 */
export interface StoreMarker {
  /** When the service first used this Redis (again, after a loss). ISO 8601. */
  initializedAt: string;
  /** When an instance last found the marker it had seen gone: everything written before was lost. ISO 8601. */
  dataLostAt?: string;
}

export const storeMarkerSchema = z.object({
  initializedAt: z.string().min(1),
  dataLostAt: z.string().min(1).optional(),
});

/** Redis's memory, from `INFO memory`. */
export interface StoreMemory {
  usedBytes: number;
  /** `maxmemory`; null when none is set (Redis may take the whole machine). */
  maxBytes: number | null;
  /** `maxmemory-policy` (`noeviction` is the one that keeps credits and keys). */
  policy: string | null;
}

/** Why a store refused a write, in fixed words (never the raw error: it could carry a connection string). */
export type WriteRefusal =
  "out of memory (maxmemory)" | "read-only (a replica)" | "cannot persist (MISCONF)" | "refused";

export interface MetaStore {
  /** Redis's memory use and its limit, or null when the store cannot say (the memory store, a REST API without INFO). */
  memory(): Promise<StoreMemory | null>;
  /** Write a short-lived key: null when the write went through, else why it was refused. Throws when unreachable. */
  probeWrite(): Promise<WriteRefusal | null>;
  /** The marker, or null when there is none (or what is there is not a marker). */
  readMarker(): Promise<StoreMarker | null>;
  /** Write `marker` unless there is one already; the marker there afterwards (another instance may have won). */
  createMarker(marker: StoreMarker): Promise<StoreMarker>;
  /** Overwrite the marker's fields with `marker`'s (recording a loss on it). */
  writeMarker(marker: StoreMarker): Promise<void>;
}
