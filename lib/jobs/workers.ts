import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Env } from "@/lib/env";
import { errorLabel } from "@/lib/error-log";
import { selfOrigin } from "@/lib/service-origin";
import type { Store } from "@/lib/store";
import { resetDeliveryQueue, type DeliveryQueue, type WebhookSettings } from "@/lib/webhooks";
import type { OcrPool, OcrSettings } from "@/lib/ocr";
import { JobRunner } from "./runner";
import type { WorkQueue } from "./queue/port";
import { workerName, type JobSettings } from "./settings";
import type { Runtime } from "./work-queue";

const RUNNER_KEY = Symbol.for("ocr-service.job-runner");
type RunnerHolder = { [RUNNER_KEY]?: JobRunner };

/**
 * Start this process's job runner when it is a process that lives (`JOBS_RUNNER` `background`: every server
 * instance that is not on Vercel, and `npm run worker`): it takes page tasks whenever an engine process is free.
 * Once per process (kept on globalThis: dev-server reloads share it). `always`: whatever `JOBS_RUNNER` says (the
 * worker process, whose only purpose this is). The process also delivers webhook events (lib/webhooks). The store,
 * the configuration, the engine pool and the queues are the entry point's (`services()`: lib/startup.ts,
 * scripts/worker.ts); the runner keeps them.
 */
export function ensureJobRunner(
  {
    store,
    env,
    settings,
    pool,
    workQueue,
    deliveries,
  }: Runtime & {
    store: Store;
    env: Env;
    settings: { jobs: JobSettings; ocr: OcrSettings; webhooks: WebhookSettings };
  },
  { always = false }: { always?: boolean } = {},
): JobRunner | null {
  const holder = globalThis as RunnerHolder;
  if (holder[RUNNER_KEY]) return holder[RUNNER_KEY];
  if (settings.jobs.runner !== "background" && !always) return null;
  if (!workQueue) return null;
  const runner = new JobRunner({
    queue: workQueue,
    settings: settings.jobs,
    ocr: settings.ocr,
    name: workerName(settings.jobs),
    store,
    pool,
    deliveries,
    languages: env.OCR_LANGUAGES,
  });
  holder[RUNNER_KEY] = runner;
  runner.start();
  // Webhook deliveries (and their retries) are worked where the pages are.
  deliveries?.startWorker();
  return runner;
}

export async function stopJobRunner(): Promise<void> {
  const holder = globalThis as RunnerHolder;
  const runner = holder[RUNNER_KEY];
  holder[RUNNER_KEY] = undefined;
  await runner?.stop();
  if (runner) await resetDeliveryQueue();
}

/** What `workJobsFor` works with: an entry point hands it down (lib/services.ts `services().jobWork`). */
export interface JobWorkServices {
  /** The store whose jobs are worked. */
  store: Store;
  queue: WorkQueue | null;
  pool: OcrPool;
  settings: JobSettings;
  /** This process's name on the pages it reads. */
  name: string;
  /** The languages installed (`OCR_LANGUAGES` of the configuration). */
  languages: Env["OCR_LANGUAGES"];
  /** One webhook delivery attempt's budget: what is kept of the invocation's budget for the deliveries. */
  deliveryTimeoutMs: number;
  /** Where a job's end is announced (lib/webhooks): the process's delivery queue, none without TCP Redis. */
  deliveries: DeliveryQueue | null;
  /** Deliver the webhook events that are due within a budget (the delivery queue's `drain`). */
  drainDeliveries: (budgetMs: number) => Promise<number>;
}

/**
 * Work the queue in this invocation for `budgetMs` (the `invoke` runner: the internal route and the cron route), then
 * deliver the webhook events that are due with what is left of it (at least one attempt's time when the budget
 * allows: the pages get the rest). The store, queue, settings and deliveries are the caller's (`services().jobWork`).
 */
export async function workJobsFor(
  budgetMs: number,
  { store, queue, pool, deliveries, settings, name, languages, deliveryTimeoutMs, drainDeliveries }: JobWorkServices,
): Promise<{ documents: number; pages: number }> {
  if (!queue) return { documents: 0, pages: 0 };
  const started = Date.now();
  const runner = new JobRunner({ queue, settings, name, store, languages, pool, deliveries });
  const reserve = Math.min(Math.floor(budgetMs * 0.2), deliveryTimeoutMs + 5_000);
  const worked = await runner.drain(budgetMs - reserve);
  await drainDeliveries(Math.max(budgetMs - (Date.now() - started), reserve)).catch((error: unknown) =>
    console.warn(`[webhooks] delivering events failed (${errorLabel(error)})`),
  );
  return worked;
}

/** The internal work route, relative to the deployment's origin. */
export const WORK_PATH = "/api/internal/jobs/work";
/** How old a work call's signature may be: the call is made at once, so a minute covers clocks apart. */
export const WORK_SIGNATURE_MAX_AGE_MS = 60_000;
/** Store scope of the nonces of work calls already made (each signature is accepted once). */
const NONCE_SCOPE = "work-call";

/** `t=<ms>,n=<nonce>,v1=<hex HMAC-SHA256 of "<ms>.<nonce>.<path>">` with `CRON_SECRET`; a fresh nonce each call. */
export function signWorkCall(secret: string, now = Date.now(), nonce = randomBytes(16).toString("base64url")): string {
  const mac = createHmac("sha256", secret).update(`${now}.${nonce}.${WORK_PATH}`).digest("hex");
  return `t=${now},n=${nonce},v1=${mac}`;
}

/** The signature's nonce when it is well-formed, made with `secret` and at most a minute old; null otherwise. */
export function verifyWorkCall(header: string | null, secret: string, now = Date.now()): string | null {
  const match = /^t=(\d{1,16}),n=([A-Za-z0-9_-]{16,64}),v1=([0-9a-f]{64})$/.exec(header?.trim() ?? "");
  if (!match) return null;
  const at = Number(match[1]);
  const nonce = match[2]!;
  if (Math.abs(now - at) > WORK_SIGNATURE_MAX_AGE_MS) return null;
  const expected = Buffer.from(createHmac("sha256", secret).update(`${at}.${nonce}.${WORK_PATH}`).digest("hex"));
  const given = Buffer.from(match[3]!);
  return expected.length === given.length && timingSafeEqual(expected, given) ? nonce : null;
}

/**
 * Accept a work call once: the signature verifies and its nonce was never seen (recorded in the store with `SET NX`
 * for as long as the signature could pass, on every instance). A captured signature replayed is refused.
 */
export async function acceptWorkCall(
  store: Store,
  header: string | null,
  secret: string,
  now = Date.now(),
): Promise<boolean> {
  const nonce = verifyWorkCall(header, secret, now);
  if (!nonce) return false;
  return store.limits.claimOnce({ scope: NONCE_SCOPE, id: nonce, ttlMs: 2 * WORK_SIGNATURE_MAX_AGE_MS + 5_000 });
}

/**
 * After a submission, on a runner of invocations (`invoke`, Vercel): start up to `settings.fanout` (4) signed calls of the
 * internal work route, each working the queue until it is empty or its budget ends. Only their `202`s are awaited
 * (the route works after answering). A process that works the queue itself (`background`) does nothing. The calls go
 * to the service's configured origin (lib/service-origin.ts `selfOrigin`), never to one taken from a request. `env`
 * and `settings`: the caller's configuration (`CRON_SECRET`, the origin) and jobs' settings (the runner, the fan-out).
 */
export async function kickJobWorkers(
  env: Env,
  settings: Pick<JobSettings, "runner" | "fanout">,
  pages: number,
): Promise<void> {
  if (settings.runner !== "invoke") return;
  const { CRON_SECRET: secret, VERCEL_AUTOMATION_BYPASS_SECRET: bypass } = env;
  if (!secret) {
    console.error("[jobs] CRON_SECRET is not set: no invocation can be started to read the job (docs/deploy.md#jobs)");
    return;
  }
  const url = new URL(WORK_PATH, selfOrigin(env));
  const calls = Math.min(settings.fanout, Math.max(1, pages));
  await Promise.allSettled(
    Array.from({ length: calls }, () =>
      fetch(url, {
        method: "POST",
        redirect: "manual",
        headers: { "x-work-signature": signWorkCall(secret), ...(bypass && { "x-vercel-protection-bypass": bypass }) },
      })
        .then((response) => response.body?.cancel())
        .catch((error: unknown) => console.warn(`[jobs] starting a work invocation failed (${errorLabel(error)})`)),
    ),
  );
}
