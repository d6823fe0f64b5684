import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import * as jobsRoute from "@/app/api/ocr/jobs/route";
import * as jobRoute from "@/app/api/ocr/jobs/[id]/route";
import * as processRoute from "@/app/api/ocr/process/route";
import * as workRoute from "@/app/api/internal/jobs/work/route";
import { jobViewSchema, webhookEventSchema, webhookJobDataSchema, type JobViewBody } from "@/lib/api/schemas";
import { JobRunner, WORK_PATH, resetWorkQueue } from "@/lib/jobs";
import { pageFailure } from "@/lib/jobs/lifecycle";
import { services } from "@/lib/services";
import { getEnv } from "@/lib/env";
import { configuredAllowList } from "@/lib/input";
import { getStore } from "@/lib/store";
import {
  jobEventId,
  newSigningSecret,
  resetDeliveryQueue,
  rotateWebhookSecret,
  sendTestEvent,
  setDefaultWebhookUrl,
  type WebhookSettings,
} from "@/lib/webhooks";
import {
  createAccount,
  expectApiError,
  ocrRequest,
  setEnv,
  tinyPng,
  withStore,
  type TestAccount,
} from "../api/support";
import { createTestPool } from "../support/ocr";
import { waitForWindowRoom } from "../support/redis";
import { startWebhookReceiver, waitFor, type WebhookReceiver } from "../support/webhook-receiver";
import packageJson from "@/package.json";
import { startTestRunner } from "../support/jobs";

/** Deliver the due events in this process for `budgetMs` (what the `invoke` runner does: lib/jobs `workJobsFor`). */
const drainWebhooks = async (budgetMs: number) => (await services().deliveries?.drain(budgetMs)) ?? 0;

/*
 * Webhooks end to end: jobs submitted through the route, ended by a real runner or a cancel, their events delivered
 * by the real delivery queue (BullMQ on Redis; timers on the memory store) to a real HTTP receiver that verifies
 * each one with `standardwebhooks` and the account's secret.
 */

const BASE = "http://localhost:3000";
const FAST = { URL_ALLOW_HOSTS: "127.0.0.1" };
/** Short retries and attempts (`webhookSettings()`'s constants: 60 s, 10 s, 13 attempts). */
const FAST_WEBHOOKS: Partial<WebhookSettings> = { retryBaseMs: 200, timeoutMs: 1500, maxAttempts: 3 };

const submit = (account: TestAccount, body: unknown) =>
  jobsRoute.POST(ocrRequest(body, { key: account.key, url: `${BASE}/api/ocr/jobs` }));
const status = async (account: TestAccount, jobId: string): Promise<JobViewBody> => {
  const response = await jobRoute.GET(
    ocrRequest(undefined, { key: account.key, method: "GET", url: `${BASE}/api/ocr/jobs/${jobId}` }),
  );
  expect(response.status).toBe(200);
  return jobViewSchema.strict().parse(await response.json());
};
const cancel = async (account: TestAccount, jobId: string) => {
  const response = await jobRoute.DELETE(
    ocrRequest(undefined, { key: account.key, method: "DELETE", url: `${BASE}/api/ocr/jobs/${jobId}` }),
  );
  expect(response.status).toBe(200);
};
/**
 * Cancel a job after one of its pages was read (it failed: no credit spent): a job cancelled before any page is read
 * announces nothing (lib/webhooks/service.ts `announcesEnd`), so this is how these tests end a job with an event.
 */
const cancelAfterAPage = async (account: TestAccount, jobId: string) => {
  const outcome = await getStore().jobs.failPage(
    jobId,
    1,
    pageFailure("engine_failed", "the test's failed page"),
    Date.now(),
  );
  expect(outcome.stored).toBe(1);
  await cancel(account, jobId);
};
async function accepted(response: Response): Promise<JobViewBody> {
  const text = await response.text();
  expect(response.status, text.slice(0, 300)).toBe(202);
  return jobViewSchema.strict().parse(JSON.parse(text));
}
const image = () => tinyPng("WEBHOOK 42").toString("base64");

describe.each(["redis", "memory"] as const)("webhook deliveries (%s store)", (kind) => {
  withStore(kind, FAST);
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    services({ webhooks: FAST_WEBHOOKS }).deliveries?.startWorker();
    expect(services().deliveries?.kind).toBe(kind === "redis" ? "bullmq" : "memory");
  });
  afterEach(() => {
    receiver.script = [];
  });
  afterAll(async () => {
    await resetDeliveryQueue();
    await resetWorkQueue();
    await receiver.close();
  });

  async function accountWithSecret(credits = 10): Promise<TestAccount & { secret: string }> {
    const account = await createAccount(credits);
    const { secret } = await rotateWebhookSecret(getStore(), account.userId);
    receiver.secret = secret;
    return { ...account, secret };
  }

  it("500, 500, 200: three attempts of one event with the same webhook-id, each verified; the job's status lists them", async () => {
    const account = await accountWithSecret();
    receiver.script = [500, 500, 200];
    const view = await accepted(await submit(account, { image: image(), webhook: { url: receiver.url } }));
    const before = receiver.received.length;
    await cancelAfterAPage(account, view.jobId);

    const final = await waitFor(
      async () => {
        const current = await status(account, view.jobId);
        return current.webhook?.deliveries.some((attempt) => attempt.ok) ? current : undefined;
      },
      60_000,
      "the third attempt",
    );
    const deliveries = receiver.received.slice(before);
    expect(deliveries).toHaveLength(3);
    expect(deliveries.map((delivery) => delivery.answered)).toEqual([500, 500, 200]);
    expect(deliveries.every((delivery) => delivery.refused === undefined)).toBe(true);
    // The service's own version (package.json's), not a placeholder.
    expect(new Set(deliveries.map((delivery) => delivery.headers["user-agent"]))).toEqual(
      new Set([`ocr-service/${packageJson.version} (+webhook)`]),
    );
    const ids = new Set(deliveries.map((delivery) => delivery.headers["webhook-id"]));
    expect([...ids]).toEqual([jobEventId(view.jobId)]);
    // The same body every time; the event says what ended, never any text.
    expect(new Set(deliveries.map((delivery) => delivery.body)).size).toBe(1);
    const event = webhookEventSchema.parse(deliveries[0]!.event);
    expect(event.type).toBe("job.cancelled");
    expect(webhookJobDataSchema.strict().parse(event.data)).toMatchObject({
      id: view.jobId,
      status: "cancelled",
      pagesTotal: 1,
      pagesFailed: 1,
      creditsReserved: 1,
      creditsRefunded: 1,
      resultUrl: `${BASE}/api/ocr/jobs/${view.jobId}/result`,
    });

    expect(final.webhook!.url).toBe(receiver.url);
    expect(
      final.webhook!.deliveries.map((attempt) => [attempt.attempt, attempt.status, attempt.ok, attempt.retrying]),
    ).toEqual([
      [3, 200, true, undefined],
      [2, 500, false, true],
      [1, 500, false, true],
    ]);
    expect(final.webhook!.deliveries.every((attempt) => attempt.eventId === jobEventId(view.jobId))).toBe(true);
    expect((await getStore().webhooks.listAttempts(account.userId)).map((attempt) => attempt.attempt)).toEqual([
      3, 2, 1,
    ]);
  }, 90_000);

  it("a job cancelled before any of its pages was read announces nothing (the cancel's answer says it); one cancelled later does", async () => {
    const account = await accountWithSecret();
    const before = receiver.received.length;
    const untouched = await accepted(await submit(account, { image: image(), webhook: { url: receiver.url } }));
    await cancel(account, untouched.jobId);
    const worked = await accepted(await submit(account, { image: image(), webhook: { url: receiver.url } }));
    await cancelAfterAPage(account, worked.jobId);
    const delivery = await waitFor(
      () => receiver.received.find((item) => item.headers["webhook-id"] === jobEventId(worked.jobId)),
      60_000,
      "the event",
    );
    expect(webhookEventSchema.parse(delivery.event)).toMatchObject({
      type: "job.cancelled",
      data: { id: worked.jobId, pagesFailed: 1 },
    });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(receiver.received.slice(before).map((item) => item.headers["webhook-id"])).toEqual([
      jobEventId(worked.jobId),
    ]);
    expect((await status(account, untouched.jobId)).webhook).toEqual({ url: receiver.url, deliveries: [] });
    expect(await account.balance()).toBe(10);
  }, 90_000);

  it("Retry-After on a 503: the next attempt waits at least that long (not the 200 ms back-off)", async () => {
    const account = await accountWithSecret();
    receiver.script = [{ status: 503, headers: { "retry-after": "2" } }, 200];
    const view = await accepted(await submit(account, { image: image(), webhook: { url: receiver.url } }));
    const before = receiver.received.length;
    await cancelAfterAPage(account, view.jobId);
    const [first, second] = await waitFor(
      () => {
        const got = receiver.received.slice(before);
        return got.length === 2 ? got : undefined;
      },
      60_000,
      "the second attempt",
    );
    expect([first!.answered, second!.answered]).toEqual([503, 200]);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1_900);
  }, 90_000);

  it("410 Gone: the event is not retried", async () => {
    const account = await accountWithSecret();
    receiver.script = [410];
    const view = await accepted(await submit(account, { image: image(), webhook: { url: receiver.url } }));
    const before = receiver.received.length;
    await cancelAfterAPage(account, view.jobId);
    const attempts = await waitFor(
      async () => {
        const deliveries = (await status(account, view.jobId)).webhook!.deliveries;
        return deliveries.length > 0 ? deliveries : undefined;
      },
      60_000,
      "the attempt",
    );
    expect(attempts).toMatchObject([{ attempt: 1, status: 410, ok: false, retrying: false }]);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(receiver.received.length - before).toBe(1);
  }, 90_000);

  it("the receiver refuses a tampered body, a wrong secret and an old timestamp", async () => {
    const account = await accountWithSecret();
    const view = await accepted(await submit(account, { image: image(), webhook: { url: receiver.url } }));
    const before = receiver.received.length;
    await cancelAfterAPage(account, view.jobId);
    const delivery = await waitFor(
      () => receiver.received.slice(before).find((item) => item.answered === 200),
      60_000,
      "the delivery",
    );
    const { headers, body } = delivery;
    const replay = async (payload: string, extra: Record<string, string>) => {
      const response = await fetch(receiver.url, {
        method: "POST",
        headers: { "content-type": "application/json", ...pick(headers), ...extra },
        body: payload,
      });
      await response.body?.cancel();
      return response.status;
    };
    // As delivered, it verifies (a replay within the tolerance is the receiver's to deduplicate by webhook-id).
    expect(await replay(body, {})).toBe(200);
    expect(await replay(body.replace('"cancelled"', '"succeeded"'), {})).toBe(401);
    const stranger = new Webhook(newSigningSecret()).sign(headers["webhook-id"]!, new Date(), body);
    expect(await replay(body, { "webhook-signature": stranger })).toBe(401);
    const old = new Date(Date.now() - 10 * 60_000);
    expect(
      await replay(body, {
        "webhook-timestamp": String(Math.floor(old.getTime() / 1000)),
        "webhook-signature": new Webhook(account.secret).sign(headers["webhook-id"]!, old, body),
      }),
    ).toBe(401);
    expect(receiver.received.at(-1)!.refused).toMatch(/too old/);
  }, 90_000);

  it("after a rotation both secrets sign for 24 h: a receiver with the old secret still verifies", async () => {
    const account = await accountWithSecret();
    const old = account.secret;
    const { secret: fresh } = await rotateWebhookSecret(getStore(), account.userId);
    const view = await accepted(await submit(account, { image: image(), webhook: { url: receiver.url } }));
    const before = receiver.received.length;
    receiver.secret = old;
    await cancelAfterAPage(account, view.jobId);
    const delivery = await waitFor(
      () => receiver.received.slice(before).find((item) => item.answered === 200),
      60_000,
      "the delivery",
    );
    expect(delivery.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(() => new Webhook(fresh).verify(delivery.body, delivery.headers)).not.toThrow();
  }, 90_000);

  it("a receiver on a private address is refused unless allow-listed: at submission (400, nothing charged) and at delivery", async () => {
    const account = await accountWithSecret();
    for (const url of [
      "https://10.1.2.3/hook",
      "https://localhost/hook",
      "http://example.com/hook",
      "ftp://example.com/x",
      "not a url",
    ]) {
      await expectApiError(await submit(account, { image: image(), webhook: { url } }), "invalid_request");
    }
    await expectApiError(
      await submit(account, { image: image(), webhook: { url: receiver.url, secret: "x" } }),
      "invalid_request",
    );
    expect(await account.balance()).toBe(10);

    // Accepted while allow-listed; the allow list is gone by the time it is delivered: refused, not retried.
    const view = await accepted(await submit(account, { image: image(), webhook: { url: receiver.url } }));
    const before = receiver.received.length;
    const restore = setEnv({ URL_ALLOW_HOSTS: "" });
    try {
      await expectApiError(
        await submit(account, { image: image(), webhook: { url: receiver.url } }),
        "invalid_request",
        /not a public address|https/,
      );
      await cancelAfterAPage(account, view.jobId);
      const attempts = await waitFor(
        async () => {
          const current = await status(account, view.jobId);
          return current.webhook!.deliveries.length > 0 ? current.webhook!.deliveries : undefined;
        },
        60_000,
        "the refused attempt",
      );
      expect(attempts).toHaveLength(1);
      expect(attempts[0]).toMatchObject({ attempt: 1, status: null, ok: false, retrying: false });
      expect(attempts[0]!.error).toMatch(/127\.0\.0\.1 is not a public address/);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(receiver.received.length).toBe(before);
      expect((await status(account, view.jobId)).webhook!.deliveries).toHaveLength(1);
    } finally {
      restore();
    }
  }, 90_000);

  it("a receiver that never answers is abandoned at the timeout, each attempt; the connection is closed", async () => {
    const account = await accountWithSecret();
    receiver.script = ["hang", "hang", "hang"];
    const view = await accepted(await submit(account, { image: image(), webhook: { url: receiver.url } }));
    await cancelAfterAPage(account, view.jobId);
    const attempts = await waitFor(
      async () => {
        const deliveries = (await status(account, view.jobId)).webhook!.deliveries;
        return deliveries.length === 3 ? deliveries : undefined;
      },
      60_000,
      "three timed-out attempts",
    );
    for (const attempt of attempts) {
      expect(attempt).toMatchObject({ status: null, ok: false });
      expect(attempt.error).toMatch(/no answer within 1\.5 s/);
    }
    expect(attempts[0]!.retrying).toBe(false);
    expect(attempts[1]!.retrying).toBe(true);
    await waitFor(() => (receiver.openConnections() === 0 ? true : undefined), 30_000, "the hung connections to close");
  }, 90_000);

  it("a job with a webhook needs the account's secret (400 without); the default URL applies when a job names none", async () => {
    const account = await createAccount(10);
    await expectApiError(
      await submit(account, { image: image(), webhook: { url: receiver.url } }),
      "invalid_request",
      /signing secret/,
    );
    expect(await account.balance()).toBe(10);
    const { secret } = await rotateWebhookSecret(getStore(), account.userId);
    receiver.secret = secret;
    await setDefaultWebhookUrl(getStore(), account.userId, receiver.url, configuredAllowList(getEnv()));
    const view = await accepted(await submit(account, { image: image() }));
    expect((await status(account, view.jobId)).webhook).toEqual({ url: receiver.url, deliveries: [] });
    // The synchronous route has no webhook.
    const sync = await processRoute.POST(
      ocrRequest({ image: image(), webhook: { url: receiver.url } }, { key: account.key }),
    );
    await expectApiError(sync, "invalid_request", /webhook is for jobs/);

    await waitForWindowRoom(60_000, 15_000);
    const before = receiver.received.length;
    const allowHosts = configuredAllowList(getEnv());
    const attempt = await sendTestEvent(getStore(), account.userId, { allowHosts });
    expect(attempt).toMatchObject({ type: "webhook.test", status: 200, ok: true, attempt: 1 });
    const delivery = receiver.received.slice(before)[0]!;
    expect(delivery.refused).toBeUndefined();
    expect(webhookEventSchema.parse(delivery.event).type).toBe("webhook.test");
    expect((await getStore().webhooks.listAttempts(account.userId))[0]).toMatchObject({
      type: "webhook.test",
      ok: true,
    });
    // Ten a minute: the eleventh is refused before anything is sent.
    for (let i = 0; i < 9; i++) expect((await sendTestEvent(getStore(), account.userId, { allowHosts })).ok).toBe(true);
    const sent = receiver.received.length;
    await expect(sendTestEvent(getStore(), account.userId, { allowHosts })).rejects.toMatchObject({
      code: "rate_limited",
    });
    expect(receiver.received.length).toBe(sent);
    await cancel(account, view.jobId);
  }, 90_000);
});

describe("a job that succeeds is announced once, by the runner that ended it (redis)", () => {
  withStore("redis", FAST);
  const pool = createTestPool();
  let runners: JobRunner[] = [];
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    services({ webhooks: FAST_WEBHOOKS }).deliveries?.startWorker();
    // Two runners race for the job's pages and its end.
    runners = ["a", "b"].map((name) => startTestRunner(`webhooks-${name}`, pool));
  }, 120_000);
  afterAll(async () => {
    for (const runner of runners) await runner.stop();
    await resetDeliveryQueue();
    await resetWorkQueue();
    await pool.terminate();
    await receiver.close();
  });

  it("job.succeeded with its pages and credits, verified, delivered once", async () => {
    const account = await createAccount(10);
    const { secret } = await rotateWebhookSecret(getStore(), account.userId);
    receiver.secret = secret;
    const view = await accepted(await submit(account, { image: image(), webhook: { url: receiver.url } }));
    const delivery = await waitFor(
      () => receiver.received.find((item) => item.headers["webhook-id"] === jobEventId(view.jobId)),
      120_000,
      "the event",
    );
    expect(delivery.refused).toBeUndefined();
    const event = webhookEventSchema.parse(delivery.event);
    expect(event).toMatchObject({
      type: "job.succeeded",
      data: { id: view.jobId, status: "succeeded", pagesDone: 1, creditsUsed: 1, creditsRefunded: 0 },
    });
    expect(delivery.body).not.toMatch(/WEBHOOK 42|extractedText/i);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(receiver.received.filter((item) => item.headers["webhook-id"] === jobEventId(view.jobId))).toHaveLength(1);
    expect((await status(account, view.jobId)).webhook!.deliveries).toMatchObject([
      { attempt: 1, status: 200, ok: true },
    ]);
  }, 180_000);
});

describe("deliveries in invocations (the invoke runner: no worker, drained within a budget; redis)", () => {
  withStore("redis", FAST);
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    // The process's delivery queue, built here with the short timings (no worker: drained by the test).
    void services({ webhooks: FAST_WEBHOOKS }).deliveries;
  });
  afterAll(async () => {
    await resetDeliveryQueue();
    await resetWorkQueue();
    await receiver.close();
  });

  it("a due event is delivered by drainWebhooks; its retry waits for its delay and the next drain", async () => {
    const account = await createAccount(10);
    receiver.secret = (await rotateWebhookSecret(getStore(), account.userId)).secret;
    receiver.script = [503, 200];
    const view = await accepted(await submit(account, { image: image(), webhook: { url: receiver.url } }));
    await cancelAfterAPage(account, view.jobId);
    expect(receiver.received).toHaveLength(0);
    expect(await drainWebhooks(20_000)).toBe(1);
    expect(receiver.received.map((item) => item.answered)).toEqual([503]);
    const delivered = await waitFor(
      async () => {
        await drainWebhooks(20_000);
        return receiver.received.length === 2 ? receiver.received : undefined;
      },
      60_000,
      "the retry",
    );
    expect(delivered.map((item) => [item.answered, item.headers["webhook-id"]])).toEqual([
      [503, jobEventId(view.jobId)],
      [200, jobEventId(view.jobId)],
    ]);
    expect(await drainWebhooks(20_000)).toBe(0);
  }, 90_000);
});

describe("on a runner of invocations (Vercel): a cancel starts an invocation, which delivers the event (redis)", () => {
  const SECRET = "test-cron-secret-0123456789";
  withStore("redis", {
    ...FAST,
    JOBS_RUNNER: "invoke",
    CRON_SECRET: SECRET,
    OCR_ENGINE_PROCESSES: "1",
    OCR_ENGINES: "tesseract",
  });
  let receiver: WebhookReceiver;
  /** The work calls the service makes to itself, held until the test runs them (no network: fetch is stubbed). */
  const workCalls: Request[] = [];
  let restoreFetch: () => void;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    // The process's delivery queue, built here with the short timings; the invocation drains it.
    void services({ webhooks: FAST_WEBHOOKS }).deliveries;
    const original = globalThis.fetch;
    globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init);
      if (new URL(request.url).pathname === WORK_PATH) {
        workCalls.push(request);
        return new Response(null, { status: 202 });
      }
      return original(input, init);
    }) as typeof fetch;
    restoreFetch = () => {
      globalThis.fetch = original;
    };
  });
  afterAll(async () => {
    restoreFetch();
    await resetDeliveryQueue();
    await resetWorkQueue();
    await services().pool.terminate();
    await receiver.close();
  });

  it("DELETE of a job with a webhook starts a signed work call; that invocation delivers job.cancelled", async () => {
    const account = await createAccount(10);
    receiver.secret = (await rotateWebhookSecret(getStore(), account.userId)).secret;
    const view = await accepted(await submit(account, { image: image(), webhook: { url: receiver.url } }));
    expect(workCalls.length).toBeGreaterThanOrEqual(1); // the submission's, held: the job stays queued
    workCalls.length = 0;
    await cancelAfterAPage(account, view.jobId);
    await waitFor(() => (workCalls.length === 1 ? true : undefined), 30_000, "the work call after the cancel");
    expect(workCalls[0]!.headers.get("x-work-signature")).toMatch(/^t=\d+,n=[\w-]{22},v1=[0-9a-f]{64}$/);
    expect(receiver.received).toHaveLength(0);

    const response = await workRoute.POST(workCalls[0]!);
    expect(response.status).toBe(202);
    const delivery = await waitFor(
      () => receiver.received.find((item) => item.headers["webhook-id"] === jobEventId(view.jobId)),
      60_000,
      "the event",
    );
    expect(delivery.refused).toBeUndefined();
    expect(webhookEventSchema.parse(delivery.event)).toMatchObject({ type: "job.cancelled", data: { id: view.jobId } });
  }, 120_000);
});

function pick(headers: Record<string, string>): Record<string, string> {
  return {
    "webhook-id": headers["webhook-id"]!,
    "webhook-timestamp": headers["webhook-timestamp"]!,
    "webhook-signature": headers["webhook-signature"]!,
  };
}
