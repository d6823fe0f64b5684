import { getEnv, type Env } from "@/lib/env";
import { processWorkQueue, workerName, type JobWorkServices, type Runtime, type WorkQueue } from "@/lib/jobs";
import { processOcrPool, type OcrPool } from "@/lib/ocr";
import { processSettings, type Settings, type SettingsOverrides } from "@/lib/settings";
import { getStore, type Store } from "@/lib/store";
import { processDeliveryQueue, type DeliveryQueue } from "@/lib/webhooks";

/**
 * The process's services, for the layers below an entry point: the configuration and the modules' settings (read once
 * per call of `services()`), and the store, the engine pool, the work queue and the delivery queue, each built once
 * per process on first use from them (kept on globalThis by their modules, so dev-server reloads and tests that reset
 * them share one; the first to build one gives its settings). An entry point — a route's wrapper (lib/http/routes.ts),
 * a page, lib/startup.ts, scripts/worker.ts — takes what it needs here and hands it down as arguments, instead of the
 * layers below reaching for them (issue 33, issue 41; the pattern of unkey's `Services`). Only entry points import
 * this module: a layer below that did would close an import cycle (tests/import-cycles.test.ts).
 */
export interface Services extends Runtime {
  readonly env: Env;
  readonly store: Store;
  /** The modules' settings (lib/settings): the constants, with the overrides this process's `main` installed. */
  readonly settings: Settings;
  /** What `workJobsFor` needs: the work queue, the jobs' settings, this process's name, the webhook deliveries. */
  readonly jobWork: JobWorkServices;
}

/**
 * This process's services; the store, the pool and the queues are only built when first read. `overrides`: a route
 * instance's or a test's overrides of the settings (on top of the process's).
 */
export function services(overrides?: SettingsOverrides): Services {
  const env = getEnv();
  const settings = processSettings(env, overrides);
  const pool = (): OcrPool => processOcrPool(env, settings.ocr);
  const workQueue = (): WorkQueue | null => processWorkQueue(env, getStore(), settings.jobs);
  const deliveries = (): DeliveryQueue | null => processDeliveryQueue(env, getStore(), settings.webhooks);
  return {
    env,
    get store() {
      return getStore();
    },
    settings,
    get pool() {
      return pool();
    },
    get workQueue() {
      return workQueue();
    },
    get deliveries() {
      return deliveries();
    },
    get jobWork() {
      return {
        store: getStore(),
        queue: workQueue(),
        pool: pool(),
        deliveries: deliveries(),
        settings: settings.jobs,
        name: workerName(settings.jobs),
        languages: env.OCR_LANGUAGES,
        deliveryTimeoutMs: settings.webhooks.timeoutMs,
        drainDeliveries: async (budgetMs: number) => (await deliveries()?.drain(budgetMs)) ?? 0,
      };
    },
  };
}
