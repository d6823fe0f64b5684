/*
 * Where a job's file should live (docs/decisions.md#job-source): stores a random file of N MiB (default 100) through
 * the job store as base64 (the Upstash REST path) and as bytes (the TCP path), with the Redis memory of its chunks
 * (MEMORY USAGE) and the time to write and read it; then on the local disk (write + fsync, read), and fetched again
 * over loopback HTTP with an ETag check. `REDIS_URL=… npx tsx --conditions=react-server scripts/measure-job-source.ts 100`
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { createClient } from "redis";
import { createRedisStore, createTcpRedis } from "@/lib/store";

const MiB = 1024 * 1024;
const size = Number(process.argv[2] ?? 100) * MiB;
const bytes = new Uint8Array(randomBytes(size));
const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const prefix = `where-${Date.now()}:`;
const t = async <T>(f: () => Promise<T>) => {
  const s = performance.now();
  const v = await f();
  return [Math.round(performance.now() - s), v] as const;
};
const out: Record<string, unknown> = { fileMiB: size / MiB };
for (const mode of ["base64", "bytes"] as const) {
  const { redis, binary, close } = createTcpRedis(url, { commandTimeoutMs: 60_000 });
  const store = createRedisStore({ redis, ...(mode === "bytes" && { binary }), prefix, kind: "redis-tcp" });
  const [putMs, put] = await t(() =>
    store.jobs.putSource(`job_${mode}`, bytes, {
      chunkBytes: 4 * MiB - 1024,
      pendingTtlMs: 120_000,
      userId: "usr_w",
      maxAccountBytes: 1e12,
    }),
  );
  const chunks = put.ok ? put.chunks : 0;
  const client = createClient({ url, RESP: 2 });
  await client.connect();
  let mem = 0;
  for (const key of await client.keys(`${prefix}job:job_${mode}:src:*`))
    mem += Number(await client.sendCommand(["MEMORY", "USAGE", key, "SAMPLES", "0"]));
  const [getMs] = await t(() => store.jobs.getSource(`job_${mode}`, chunks));
  await store.jobs.deleteSource(`job_${mode}`, chunks, { userId: "usr_w", bytes: size });
  await client.close();
  await close();
  out[`redis-${mode}`] = { putMs, getMs, redisMiB: +(mem / MiB).toFixed(1) };
}
const file = path.join(os.tmpdir(), `where-${Date.now()}.bin`);
const [writeMs] = await t(async () => {
  const h = await fs.open(file, "w");
  await h.writeFile(bytes);
  await h.sync();
  await h.close();
});
const [readMs] = await t(() => fs.readFile(file));
await fs.rm(file);
out.disk = { writeFsyncMs: writeMs, readMs };
const server = http.createServer((_, res) => {
  res.writeHead(200, { "content-length": String(size), etag: '"v1"' });
  res.end(Buffer.from(bytes.buffer));
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const port = (server.address() as { port: number }).port;
const [fetchMs] = await t(async () => new Uint8Array(await (await fetch(`http://127.0.0.1:${port}/f`)).arrayBuffer()));
const [headMs] = await t(async () =>
  (await fetch(`http://127.0.0.1:${port}/f`, { method: "HEAD" })).headers.get("etag"),
);
server.close();
out.refetchLoopback = { fetchMs, validatorHeadMs: headMs };
console.log(JSON.stringify(out));
