import { createHmac, timingSafeEqual } from "node:crypto";
import { getEnv } from "@/lib/env";
import { errorLabel } from "@/lib/error-log";
import { drainWebhooks, resetDeliveryQueue, startWebhookWorker, webhookSettings } from "@/lib/webhooks";
import { JobRunner } from "./runner";
import { getWorkQueue, jobSettings, workerName } from "./settings";

const RUNNER_KEY = Symbol.for("ocr-service.job-runner");
type RunnerHolder = { [RUNNER_KEY]?: JobRunner };

/**
 * Start this process's job runner when it is a process that lives (`JOBS_RUNNER` `background`: every server
 * instance that is not on Vercel, and `npm run worker`): it takes page tasks whenever an engine process is free.
 * Once per process (kept on globalThis: dev-server reloads share it). `always`: whatever `JOBS_RUNNER` says (the
 * worker process, whose only purpose this is). The process also delivers webhook events (lib/webhooks).
 */
export function ensureJobRunner({ always = false }: { always?: boolean } = {}): JobRunner | null {
  const holder = globalThis as RunnerHolder;
  if (holder[RUNNER_KEY]) return holder[RUNNER_KEY];
  const settings = jobSettings();
  if (settings.runner !== "background" && !always) return null;
  const queue = getWorkQueue();
  if (!queue) return null;
  const runner = new JobRunner({ queue, settings, name: workerName() });
  holder[RUNNER_KEY] = runner;
  runner.start();
  // Webhook deliveries (and their retries) are worked where the pages are.
  startWebhookWorker();
  return runner;
}

export async function stopJobRunner(): Promise<void> {
  const holder = globalThis as RunnerHolder;
  const runner = holder[RUNNER_KEY];
  holder[RUNNER_KEY] = undefined;
  await runner?.stop();
  if (runner) await resetDeliveryQueue();
}

/**
 * Work the queue in this invocation for `budgetMs` (the `invoke` runner: the internal route and the cron route), then
 * deliver the webhook events that are due with what is left of it (at least one attempt's time when the budget
 * allows: the pages get the rest).
 */
export async function workJobsFor(budgetMs: number): Promise<{ documents: number; pages: number }> {
  const queue = getWorkQueue();
  if (!queue) return { documents: 0, pages: 0 };
  const started = Date.now();
  const runner = new JobRunner({ queue, settings: jobSettings(), name: workerName() });
  const reserve = Math.min(Math.floor(budgetMs * 0.2), webhookSettings().timeoutMs + 5_000);
  const worked = await runner.drain(budgetMs - reserve);
  await drainWebhooks(Math.max(budgetMs - (Date.now() - started), reserve)).catch((error: unknown) =>
    console.warn(`[webhooks] delivering events failed (${errorLabel(error)})`),
  );
  return worked;
}

/** The internal work route, relative to the deployment's origin. */
export const WORK_PATH = "/api/internal/jobs/work";
/** How old a work call's signature may be. */
const SIGNATURE_MAX_AGE_MS = 5 * 60_000;

/** `t=<ms>,v1=<hex HMAC-SHA256 of "<ms>.<path>">` with `CRON_SECRET`. */
export function signWorkCall(secret: string, now = Date.now()): string {
  const mac = createHmac("sha256", secret).update(`${now}.${WORK_PATH}`).digest("hex");
  return `t=${now},v1=${mac}`;
}

export function verifyWorkCall(header: string | null, secret: string, now = Date.now()): boolean {
  const match = /^t=(\d{1,16}),v1=([0-9a-f]{64})$/.exec(header?.trim() ?? "");
  if (!match) return false;
  const at = Number(match[1]);
  if (Math.abs(now - at) > SIGNATURE_MAX_AGE_MS) return false;
  const expected = Buffer.from(createHmac("sha256", secret).update(`${at}.${WORK_PATH}`).digest("hex"));
  const given = Buffer.from(match[2]!);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * After a submission, on a runner of invocations (`invoke`, Vercel): start up to `JOB_FANOUT` signed calls of the
 * internal work route, each working the queue until it is empty or its budget ends. Only their `202`s are awaited
 * (the route works after answering). A process that works the queue itself (`background`) does nothing.
 */
export async function kickJobWorkers(origin: string, pages: number): Promise<void> {
  const settings = jobSettings();
  if (settings.runner !== "invoke") return;
  const { CRON_SECRET: secret, VERCEL_AUTOMATION_BYPASS_SECRET: bypass } = getEnv();
  if (!secret) {
    console.error("[jobs] CRON_SECRET is not set: no invocation can be started to read the job (docs/deploy.md#jobs)");
    return;
  }
  const calls = Math.min(settings.fanout, Math.max(1, pages));
  await Promise.allSettled(
    Array.from({ length: calls }, () =>
      fetch(new URL(WORK_PATH, origin), {
        method: "POST",
        headers: { "x-work-signature": signWorkCall(secret), ...(bypass && { "x-vercel-protection-bypass": bypass }) },
      })
        .then((response) => response.body?.cancel())
        .catch((error: unknown) => console.warn(`[jobs] starting a work invocation failed (${errorLabel(error)})`)),
    ),
  );
}
