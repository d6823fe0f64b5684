/**
 * The one-page synchronous read, in process (issue 41): what a `POST /api/ocr/process` of one image costs the
 * service around the OCR itself.
 *
 *   node --conditions=react-server --import tsx bench/one-page.ts [--reads N] [--redis URL] [--files a.png,b.jpg]
 *
 * 1. `--reads` (default 30) one-page reads through `processDocument` with the memory store, one at a time, on a
 *    one-process engine pool: wall-clock p50/p90 per read, and the CPU time of this process (not the engine's) per
 *    read — the part the intake, the store and the rendering add.
 * 2. With `--redis` (default `REDIS_URL`), 10 reads on the Redis store over TCP, its client wrapped to count the
 *    round trips (one command, one pipeline or one transaction each; binary SET/GET too) per read.
 *
 * The images: `--files`, else three generated text images (a line, a paragraph, a small receipt), held fixed.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { createCanvas } from "@napi-rs/canvas";
import { Redis, type Requester } from "@upstash/redis";
import { grantCredits } from "../lib/credits";
import { getEnv } from "../lib/env";
import { processDocument } from "../lib/intake";
import { OcrPool } from "../lib/ocr/pool/pool";
import { buildSettings } from "../lib/settings";
import { createMemoryStore, createRedisStore, type Store } from "../lib/store";
// eslint-disable-next-line no-restricted-imports -- the requester itself, wrapped to count its round trips
import { createNodeRedisRequester } from "../lib/store/node-redis-requester";
import { percentile } from "../tooling";

const { values } = parseArgs({
  options: {
    reads: { type: "string", default: "30" },
    redis: { type: "string" },
    files: { type: "string" },
  },
});
const READS = Number(values.reads);
const REDIS_URL = values.redis ?? process.env.REDIS_URL;

function textImage(lines: string[], width: number): Buffer {
  const lineHeight = 34;
  const canvas = createCanvas(width, 40 + lines.length * lineHeight);
  const context = canvas.getContext("2d");
  context.fillStyle = "#fff";
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.fillStyle = "#000";
  context.font = "24px sans-serif";
  lines.forEach((line, i) => context.fillText(line, 20, 40 + i * lineHeight));
  return canvas.toBuffer("image/png");
}

const images: Buffer[] = values.files
  ? values.files.split(",").map((file) => readFileSync(file))
  : [
      textImage(["INVOICE 2041 total 381.20 EUR"], 560),
      textImage(
        [
          "The quick brown fox jumps over the lazy dog.",
          "Pack my box with five dozen liquor jugs, said",
          "the clerk, and the order was shipped on the",
          "third of March with a tracking number 88172.",
        ],
        640,
      ),
      textImage(
        ["COFFEE 2 x 3.50     7.00", "BAGEL  1 x 2.80     2.80", "TOTAL              9.80", "CARD ****4411"],
        420,
      ),
    ];

const env = getEnv();
const settings = buildSettings(env, {});
const pool = new OcrPool({ size: 1, queueLimit: 16, maxJobsPerWorker: 200, createTimeoutMs: 60_000 });

let sequence = 0;
async function readOnce(store: Store, userId: string, image: Buffer): Promise<void> {
  await processDocument(store, {
    env,
    settings,
    // A read now: no job, no webhook.
    workQueue: null,
    deliveries: null,
    body: { image: image.toString("base64") },
    account: { userId },
    requestId: `req_bench${process.pid}_${sequence++}`,
    pool,
  });
}

async function timeReads(): Promise<void> {
  const store = createMemoryStore();
  const userId = "usr_bench_memory";
  await grantCredits(store, { userId, credits: READS + 10 });
  for (const image of images) await readOnce(store, userId, image); // warm: the engine process, its models
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < READS; i++) {
    const image = images[i % images.length]!;
    const started = performance.now();
    const cpuStart = process.cpuUsage();
    await readOnce(store, userId, image);
    const used = process.cpuUsage(cpuStart);
    wall.push(performance.now() - started);
    cpu.push((used.user + used.system) / 1000);
  }
  await store.close();
  const fmt = (ms: number[], p: number) => percentile(ms, p).toFixed(1);
  console.log(
    `memory store, ${READS} one-page reads: wall p50 ${fmt(wall, 50)} ms, p90 ${fmt(wall, 90)} ms; ` +
      `this process's CPU p50 ${fmt(cpu, 50)} ms per read`,
  );
}

class RawRedis extends Redis {
  constructor(requester: Requester) {
    super(requester);
    this.opts = { automaticDeserialization: false };
  }
}

async function countRoundTrips(url: string): Promise<void> {
  const requester = createNodeRedisRequester(url);
  let trips = 0;
  const counted: Requester & { binary: typeof requester.binary } = {
    request: (req) => {
      trips++;
      return requester.request(req);
    },
    binary: {
      set: (...args) => {
        trips++;
        return requester.binary.set(...args);
      },
      get: (...args) => {
        trips++;
        return requester.binary.get(...args);
      },
    },
  };
  const prefix = `bench-one-page-${process.pid}-${Date.now()}:`;
  const store = createRedisStore({ redis: new RawRedis(counted), binary: counted.binary, prefix, kind: "redis-tcp" });
  const userId = "usr_bench_redis";
  await grantCredits(store, { userId, credits: 100 });
  await readOnce(store, userId, images[0]!); // warm (the scripts loaded)
  const perRead: number[] = [];
  for (let i = 0; i < 10; i++) {
    const before = trips;
    await readOnce(store, userId, images[i % images.length]!);
    perRead.push(trips - before);
  }
  // Clean up this run's keys.
  const redis = new RawRedis(requester);
  let cursor = "0";
  do {
    const [next, keys] = (await redis.scan(cursor, { match: `${prefix}*`, count: 1000 })) as [string, string[]];
    cursor = String(next);
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== "0");
  await requester.close();
  console.log(`redis store: round trips per one-page read ${perRead.join(", ")} (p50 ${percentile(perRead, 50)})`);
}

try {
  await pool.warm();
  await timeReads();
  if (REDIS_URL) await countRoundTrips(REDIS_URL);
} finally {
  await pool.terminate();
}
