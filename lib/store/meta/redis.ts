import { call, flatHash, type RedisContext } from "../redis-support";
import { createMarkerScript } from "./scripts";
import { type MetaStore, type StoreMarker, type WriteRefusal, storeMarkerSchema } from "./port";

/** `INFO memory` from a script: one round trip on TCP and over Upstash's REST API alike. */
const INFO_MEMORY = "return redis.call('INFO', 'memory')";
/** How long the write probe's key lives. */
const PROBE_TTL_MS = 60_000;

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
    async memory() {
      let reply: unknown;
      try {
        reply = await redis.eval(INFO_MEMORY, [], []);
      } catch {
        return null; // a REST API without INFO in scripts: nothing to say
      }
      if (typeof reply !== "string") return null;
      const field = (name: string) => reply.match(new RegExp(`^${name}:(\\S+)`, "m"))?.[1];
      const used = Number(field("used_memory"));
      if (!Number.isFinite(used)) return null;
      const max = Number(field("maxmemory"));
      return {
        usedBytes: used,
        maxBytes: Number.isFinite(max) && max > 0 ? max : null,
        policy: field("maxmemory_policy") ?? null,
      };
    },

    async probeWrite() {
      try {
        await redis.set(key.probe(), String(Date.now()), { px: PROBE_TTL_MS });
        return null;
      } catch (error) {
        const refusal = writeRefusal(error);
        if (refusal) return refusal;
        throw error;
      }
    },

    async readMarker() {
      return parse(await call("readMarker", () => redis.hgetall(key.marker())));
    },

    async createMarker(marker) {
      const reply = await call("createMarker", () =>
        create.exec([key.marker()], Object.entries(fields(marker)).flat()),
      );
      const stored = parse(reply);
      if (!stored) throw new Error("the store marker could not be read back");
      return stored;
    },

    async writeMarker(marker) {
      await call("writeMarker", () => redis.hset(key.marker(), fields(marker)));
    },
  };
}

/** A write the server answered with a refusal (as opposed to no answer at all). */
function writeRefusal(error: unknown): WriteRefusal | null {
  const message = error instanceof Error ? error.message : String(error);
  if (/\bOOM\b/.test(message)) return "out of memory (maxmemory)";
  if (/\bREADONLY\b/.test(message)) return "read-only (a replica)";
  if (/\bMISCONF\b/.test(message)) return "cannot persist (MISCONF)";
  if (/^ERR|^WRONGTYPE|^NOPERM|UpstashError/.test(message)) return "refused";
  return null;
}
