import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import workerThreads from "node:worker_threads";

/*
 * The setup of the `unit` and `redis` projects (vitest.config.ts, `TEST_TIER`): their tests start no engine process
 * (nor Tesseract's worker threads), and a unit test reaches no Redis either. What a tier may not use fails at once,
 * naming the project the file belongs in, instead of slowing the tier down or passing only on a machine that has
 * Redis. Not a mock: nothing is imitated, the call is refused.
 */

const tier = process.env.TEST_TIER;

function refuse(what: string): never {
  throw new Error(`the ${tier} tier ${what}: list this test file under the "engine" project in vitest.config.ts`);
}

// The engine processes (lib/ocr/pool/engine-process.ts forks them) and Tesseract's in-process worker threads. The
// thread that makes a searchable PDF (lib/ocr/render/pdf-off-thread.ts: pdf-lib, no engine) is allowed.
childProcess.fork = () => refuse("starts no engine process");
const RealWorker = workerThreads.Worker;
workerThreads.Worker = class extends RealWorker {
  constructor(...args: ConstructorParameters<typeof RealWorker>) {
    if (!String(args[0]).endsWith("/build/engine/pdf-render.mjs")) refuse("starts no worker thread (Tesseract)");
    super(...args);
  }
} as typeof workerThreads.Worker;
syncBuiltinESMExports();

if (tier === "unit") {
  // The store comes from the environment: with no Redis variable it is the in-memory store, and a test that asks for
  // the test Redis (tests/support/redis.ts) is sent to an address that does not resolve.
  for (const name of ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN", "KV_REST_API_URL", "KV_REST_API_TOKEN"])
    delete process.env[name];
  process.env.REDIS_URL = "redis://no-redis-in-the-unit-tier.invalid:6379";
}
