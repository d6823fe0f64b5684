import { http, HttpResponse } from "msw";
import { setupServer } from "msw/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as workRoute from "@/app/api/internal/jobs/work/route";
import * as jobsRoute from "@/app/api/ocr/jobs/route";
import * as jobRoute from "@/app/api/ocr/jobs/[id]/route";
import * as cronRoute from "@/app/api/cron/jobs/route";
import { jobViewSchema } from "@/lib/api/schemas";
import { WORK_PATH, resetWorkQueue, signWorkCall, verifyWorkCall } from "@/lib/jobs";
import { services } from "@/lib/services";
import { resetStore } from "@/lib/store";
import { base64Of, callOcr, createAccount, expectApiError, ocrRequest, withStore } from "../api/support";
import { TEST_REDIS_URL, createTestPrefix, deleteKeysWithPrefix, pushStoreEnv } from "../support/redis";
import { startUpstashBridge, type UpstashBridge } from "../support/upstash-bridge";

/*
 * The runner of invocations (`JOBS_RUNNER=invoke`, Vercel): nothing works the queue until the submission starts
 * signed calls of the internal work route after its answer, each working the queue within its budget. msw carries
 * those calls (the deployment calling itself over HTTP) to the route handler in process.
 */

const SECRET = "test-cron-secret-0123456789";
const ORIGIN = "http://deployment.test";

describe("a deployment with only Upstash's REST URL (no TCP Redis for BullMQ)", () => {
  let bridge: UpstashBridge;
  const prefix = createTestPrefix("jobs-rest");
  let restoreEnv = () => {};
  beforeAll(async () => {
    bridge = startUpstashBridge({ redisUrl: TEST_REDIS_URL });
    restoreEnv = pushStoreEnv({
      UPSTASH_REDIS_REST_URL: bridge.url,
      UPSTASH_REDIS_REST_TOKEN: bridge.token,
      REDIS_PREFIX: prefix,
      LOG_REQUESTS: "false",
    });
    await resetStore();
    await resetWorkQueue();
  });
  afterAll(async () => {
    await resetWorkQueue();
    await resetStore();
    await deleteKeysWithPrefix(prefix);
    restoreEnv();
    await bridge.close();
  });

  // First in the file: the next describe stops the process-wide engine pool when it ends.
  it("a job is 503 saying what it needs, nothing is charged; the synchronous route works", async () => {
    const account = await createAccount(10);
    const response = await jobsRoute.POST(
      ocrRequest({ image: base64Of("born-digital.pdf") }, { key: account.key, url: `${ORIGIN}/api/ocr/jobs` }),
    );
    await expectApiError(response, "unavailable", /REDIS_URL/);
    expect(await account.balance()).toBe(10);
    const sync = await callOcr({ image: base64Of("born-digital.pdf") }, { key: account.key });
    expect(sync.status).toBe(200);
    expect(await account.balance()).toBe(7);
  }, 180_000);
});

describe("jobs on a runner of invocations", () => {
  withStore("redis", {
    SERVICE_URL: ORIGIN,
    JOBS_RUNNER: "invoke",
    CRON_SECRET: SECRET,
    OCR_ENGINE_PROCESSES: "1",
    OCR_ENGINES: "tesseract",
  });
  const calls: Array<{ signature: string | null; status: number }> = [];
  const server = setupServer(
    http.post(`${ORIGIN}${WORK_PATH}`, async ({ request }) => {
      const response = await workRoute.POST(new Request(request.url, { method: "POST", headers: request.headers }));
      calls.push({ signature: request.headers.get("x-work-signature"), status: response.status });
      return new HttpResponse(null, { status: response.status });
    }),
  );
  beforeAll(() =>
    server.listen({
      onUnhandledFrame: ({ frame }) => {
        throw new Error(`unhandled network frame ${frame.constructor.name}`);
      },
    }),
  );
  afterAll(async () => {
    server.close();
    await resetWorkQueue();
    await services().pool.terminate();
  });

  it("signatures: fresh ones pass; old, altered, or made with another secret do not", () => {
    const now = Date.now();
    expect(verifyWorkCall(signWorkCall(SECRET, now), SECRET, now)).not.toBeNull();
    expect(verifyWorkCall(signWorkCall(SECRET, now - 10 * 60_000), SECRET, now)).toBeNull();
    expect(verifyWorkCall(signWorkCall("another-secret", now), SECRET, now)).toBeNull();
    expect(
      verifyWorkCall(
        signWorkCall(SECRET, now).replace(/.$/, (c) => (c === "0" ? "1" : "0")),
        SECRET,
        now,
      ),
    ).toBeNull();
    expect(verifyWorkCall(null, SECRET, now)).toBeNull();
  });

  it("an unsigned call of the work route is 401 and works nothing", async () => {
    await expectApiError(
      await workRoute.POST(new Request(`${ORIGIN}${WORK_PATH}`, { method: "POST" })),
      "unauthorized",
    );
    await expectApiError(
      await workRoute.POST(
        new Request(`${ORIGIN}${WORK_PATH}`, { method: "POST", headers: { "x-work-signature": signWorkCall("nope") } }),
      ),
      "unauthorized",
    );
  });

  it("a submission starts signed work calls, and they read the job to its end", async () => {
    const account = await createAccount(10);
    // A route instance that starts two work calls per submission (the constant is four).
    const response = await jobsRoute.POST.with({ settings: { jobs: { fanout: 2 } } })(
      ocrRequest({ image: base64Of("scanned-3.pdf") }, { key: account.key, url: `${ORIGIN}/api/ocr/jobs` }),
    );
    expect(response.status).toBe(202);
    const view = jobViewSchema.parse(await response.json());
    let status = view;
    while (status.status === "queued" || status.status === "running") {
      await new Promise((resolve) => setTimeout(resolve, 250));
      status = jobViewSchema.parse(
        await (
          await jobRoute.GET(
            ocrRequest(undefined, { key: account.key, method: "GET", url: `${ORIGIN}${view.links.self}` }),
          )
        ).json(),
      );
    }
    expect(status).toMatchObject({ status: "succeeded", pagesDone: 3 });
    expect(calls.length).toBe(2);
    expect(calls.every((call) => call.status === 202 && call.signature?.startsWith("t="))).toBe(true);
  }, 180_000);

  it("the cron route works what is left (here: nothing) and needs the cron secret", async () => {
    await expectApiError(await cronRoute.GET(new Request(`${ORIGIN}/api/cron/jobs`)), "unauthorized");
    const response = await cronRoute.GET(
      new Request(`${ORIGIN}/api/cron/jobs`, { headers: { authorization: `Bearer ${SECRET}` } }),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ success: true, documents: 0, pages: 0 });
  }, 180_000);
});
