import { z } from "zod";
import { call, flatHash, type RedisContext } from "./redis-support";
import { createMarkerScript } from "./scripts";

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

/** The marker as a hash: `meta:marker` → `initializedAt`, `dataLostAt`. */
export function createRedisMetaStore({ redis, key }: RedisContext): MetaStore {
  const create = redis.createScript<unknown>(createMarkerScript);
  const parse = (reply: unknown): StoreMarker | null => {
    const parsed = storeMarkerSchema.safeParse(flatHash.parse(reply ?? []));
    return parsed.success ? parsed.data : null;
  };
  const fields = (marker: StoreMarker): Record<string, string> => ({
    initializedAt: marker.initializedAt,
    ...(marker.dataLostAt && { dataLostAt: marker.dataLostAt }),
  });
  return {
    async readMarker() {
      return parse(await call("readMarker", () => redis.hgetall(key.marker())));
    },

    async createMarker(marker) {
      const reply = await call("createMarker", () => create.exec([key.marker()], Object.entries(fields(marker)).flat()));
      const stored = parse(reply);
      if (!stored) throw new Error("the store marker could not be read back");
      return stored;
    },

    async writeMarker(marker) {
      await call("writeMarker", () => redis.hset(key.marker(), fields(marker)));
    },
  };
}

/** The marker for one process: never lost while the process lives (and the memory store's data dies with it). */
export function createMemoryMetaStore(): MetaStore {
  let stored: StoreMarker | null = null;
  return {
    async readMarker() {
      return stored && { ...stored };
    },
    async createMarker(marker) {
      stored ??= { ...marker };
      return { ...stored };
    },
    async writeMarker(marker) {
      stored = { ...marker };
    },
  };
}
