/*
 * Redis memory per stored MiB of a job's file (docs/decisions.md#job-source): stores random files through the job
 * store, as bytes (`bytes`, the TCP path) or base64 (`base64`, the Upstash REST path), and sums MEMORY USAGE of their
 * chunks. `npx tsx --conditions=react-server scripts/measure-job-source.ts bytes|base64 [chunkBytes]` with REDIS_URL.
 */
import { randomBytes } from "node:crypto";
import { createClient } from "redis";
import { createRedisStore, createTcpRedis } from "@/lib/store";

const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const prefix = `measure-${Date.now()}:`;
const { redis, binary, close } = createTcpRedis(url);
const useBinary = process.argv[2] === "binary";
const CHUNK = Number(process.argv[3] ?? 4 * 1024 * 1024 - 1024);
const store = createRedisStore({ redis, ...(useBinary && { binary }), prefix, kind: "redis-tcp" });
const client = createClient({ url, RESP: 2 });
await client.connect();
for (const mb of [4, 20]) {
  const bytes = new Uint8Array(randomBytes(mb * 1024 * 1024));
  const jobId = `job_measure${mb}`;
  const put = await (store.jobs.putSource as (...args: unknown[]) => Promise<unknown>)(jobId, bytes, { chunkBytes: CHUNK, pendingTtlMs: 60_000, userId: `usr_measure${useBinary}`, maxAccountBytes: 1e12 });
  const keys = await client.keys(`${prefix}job:${jobId}:src:*`);
  let total = 0;
  for (const key of keys) total += Number(await client.sendCommand(["MEMORY", "USAGE", key, "SAMPLES", "0"]));
  const back = await store.jobs.getSource(jobId, keys.length);
  console.log(JSON.stringify({ mode: useBinary ? "bytes" : "base64", fileMiB: mb, chunks: keys.length, put, redisBytes: total, perStoredMiB: +(total / mb / 1048576).toFixed(3), roundTrip: back !== null && Buffer.from(back).equals(Buffer.from(bytes)) }));
  await client.del(keys);
}
await client.close();
await close();
