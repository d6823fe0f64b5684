import { call, flatHash, type RedisContext } from "../redis-support";
import { createMarkerScript } from "./scripts";
import { type MetaStore, type StoreMarker, storeMarkerSchema } from "./port";

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
