import { getEnv, type Env } from "@/lib/env";
import { getWorkQueue, workerName, type JobWorkServices } from "@/lib/jobs";
import { processSettings, type Settings } from "@/lib/settings";
import { getStore, type Store } from "@/lib/store";
import { drainWebhooks } from "@/lib/webhooks";

/**
 * The process's services, for the layers below an entry point: the settings (the operator's variables and the
 * modules' settings, read once per call of `services()`), and the store and the queues, each built
 * once per process on first use (kept on globalThis by their modules, so dev-server reloads and tests that reset them
 * share one). An entry point — a route handler, lib/startup.ts, scripts/worker.ts — takes what it needs here and
 * hands it down as arguments, instead of the layers below reaching for `getEnv()` / `getStore()` themselves
 * (issue 33; the pattern of unkey's `Services`). Only entry points import this module: a layer below that did would
 * close an import cycle (tests/import-cycles.test.ts).
 */
export interface Services {
  readonly env: Env;
  readonly store: Store;
  /** The modules' settings (lib/settings.ts): the constants, with the overrides this process's `main` installed. */
  readonly settings: Settings;
  /** What `workJobsFor` needs: the work queue, the jobs' settings, this process's name, the webhook deliveries. */
  readonly jobWork: JobWorkServices;
}

/** This process's services; the store and the queues are only built when first read. */
export function services(): Services {
  const env = getEnv();
  const settings = processSettings(env);
  return {
    env,
    get store() {
      return getStore();
    },
    settings,
    get jobWork() {
      return {
        store: getStore(),
        queue: getWorkQueue(),
        settings: settings.jobs,
        name: workerName(settings.jobs),
        languages: env.OCR_LANGUAGES,
        deliveryTimeoutMs: settings.webhooks.timeoutMs,
        drainDeliveries: drainWebhooks,
      };
    },
  };
}
