// `npm run worker`: a process with no HTTP that reads the pages of asynchronous jobs with its own engine processes
// (`OCR_ENGINE_PROCESSES`, default: one per core). Start as many as you like, on this machine or others, against the
// same Redis (`REDIS_URL`): each takes pages of any job whenever one of its engine processes is free. SIGTERM or Ctrl-C
// finishes the pages in hand, then exits (pages of a process that is killed are taken over by the others after
// the task lock, 30 s: `jobSettings().lockMs`).
//
//   npm run worker [-- --name worker-eu-1] [-- --settings '{"jobs":{"lockMs":4000}}']
//
// `--name`: the name on the pages it reads (`readBy`; default: a hash of host and pid). `--settings`: overrides of the
// modules' constant settings (lib/settings; tests pass short timings there).
import { parseArgs } from "node:util";
import { ignoredVariablesNotice } from "@/lib/env";
import { parseSettingsArgument, type SettingsOverrides } from "@/lib/settings";
import { services } from "@/lib/services";
import { ensureJobRunner, stopJobRunner, workerName } from "@/lib/jobs";

const { values: args } = parseArgs({ options: { name: { type: "string" }, settings: { type: "string" } } });
let overrides: SettingsOverrides = {};
if (args.settings) {
  try {
    overrides = parseSettingsArgument(args.settings);
  } catch (error) {
    console.error(`[worker] ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
if (args.name) overrides = { ...overrides, jobs: { ...overrides.jobs, workerName: args.name } };
// The process's services (the settings, the store, the engine pool, the work and delivery queues) are built with them.
const given = services(overrides);
const { env } = given;
const ignored = ignoredVariablesNotice();
if (ignored) console.warn(`[worker] ${ignored}`);
if (!env.REDIS_URL) {
  console.error(
    "[worker] REDIS_URL is not set: a worker reads the jobs of a server that shares its Redis (redis:// or rediss://).",
  );
  process.exit(1);
}
const store = given.store;
if (store.kind === "memory") {
  console.error(
    "[worker] no Redis store is configured; set REDIS_URL (and the same UPSTASH_* variables as the server, if it uses them).",
  );
  process.exit(1);
}

const { settings, pool } = given;
const runner = ensureJobRunner(given, { always: true });
await pool.warm({ ocr: env.OCR_ENGINE_PROCESSES });
console.info(
  `[worker] ${workerName(settings.jobs)} reading job pages with ${env.OCR_ENGINE_PROCESSES} engine process${env.OCR_ENGINE_PROCESSES === 1 ? "" : "es"}`,
);

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.info(`[worker] ${signal}: finishing the pages in hand`);
  await stopJobRunner();
  await pool.terminate();
  await store.close();
  process.exit(0);
}
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => void shutdown(signal));
if (!runner) process.exit(1);
