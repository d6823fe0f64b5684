import { getEnv } from "@/lib/env";
import { JobRunner, jobSettings } from "@/lib/jobs";
import { services } from "@/lib/services";
import type { OcrPool, OcrSettings } from "@/lib/ocr";
import { getStore } from "@/lib/store";

/**
 * A job runner of the test's own, started: it works the process's work queue and store (the file's `withStore`) with
 * the jobs' settings of the test configuration and the engine processes `pool`, under `name` (its pages' `readBy`).
 * `ocr`: the engine's settings for the pages it reads, when a test gives its own (the constants otherwise).
 */
export function startTestRunner(name: string, pool: OcrPool, ocr?: OcrSettings): JobRunner {
  const env = getEnv();
  const runner = new JobRunner({
    store: getStore(),
    queue: services().workQueue!,
    deliveries: services().deliveries,
    settings: jobSettings({}, env),
    name,
    pool,
    languages: env.OCR_LANGUAGES,
    ...(ocr && { ocr }),
  });
  runner.start();
  return runner;
}
