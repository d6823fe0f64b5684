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

export const storeMarkerSchema = z.object({ initializedAt: z.string().min(1), dataLostAt: z.string().min(1).optional() });

export interface MetaStore {
  /** The marker, or null when there is none (or what is there is not a marker). */
  readMarker(): Promise<StoreMarker | null>;
  /** Write `marker` unless there is one already; the marker there afterwards (another instance may have won). */
  createMarker(marker: StoreMarker): Promise<StoreMarker>;
  /** Overwrite the marker's fields with `marker`'s (recording a loss on it). */
  writeMarker(marker: StoreMarker): Promise<void>;
}
