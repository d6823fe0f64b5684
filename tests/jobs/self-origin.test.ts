import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import * as jobsRoute from "@/app/api/ocr/jobs/route";
import * as jobRoute from "@/app/api/ocr/jobs/[id]/route";
import * as workRoute from "@/app/api/internal/jobs/work/route";
import { cancelJobAction } from "@/app/actions/jobs";
import { signUp } from "@/lib/accounts";
import { createSession } from "@/lib/accounts/sessions";
import { createApiKey } from "@/lib/keys";
import { jobViewSchema, type JobViewBody } from "@/lib/api/schemas";
import { WORK_PATH, WORK_SIGNATURE_MAX_AGE_MS, resetWorkQueue, signWorkCall, verifyWorkCall } from "@/lib/jobs";
import { services } from "@/lib/services";
import { selfOrigin } from "@/lib/service-origin";
import { getEnv, parseEnv } from "@/lib/env";
import { getStore } from "@/lib/store";
import { rotateWebhookSecret } from "@/lib/webhooks";
import {
  createAccount,
  expectApiError,
  ocrRequest,
  setEnv,
  tinyPng,
  withStore,
  type TestAccount,
} from "../api/support";
import { protectedResourceMetadata, serviceOrigin } from "@/lib/oauth";

/*
 * Issue 29, point 4: the service's calls of its own work route go to the configured origin, never to the one a
 * request's `Host` names; each signature is accepted once, within a minute. The settings page's cancel action runs
 * here as Next.js runs it, with its request's headers and session cookie (`next/headers`) standing for a browser's
 * request sent with `Host: evil`.
 */

const SECRET = "test-cron-secret-0123456789";
const SERVICE = "http://ocr-service.test";
const EVIL_HEADERS = { host: "evil", "x-forwarded-host": "evil", "x-forwarded-proto": "http" };
const request = vi.hoisted(() => ({ headers: new Headers(), cookie: "" }));

vi.mock("next/headers", () => ({
  headers: async () => request.headers,
  cookies: async () => ({
    get: (name: string) => (name === "ocr_session" && request.cookie ? { name, value: request.cookie } : undefined),
  }),
}));
vi.mock("next/cache", () => ({ revalidatePath: () => undefined }));
vi.mock("next/navigation", () => ({
  redirect: (to: string) => {
    throw new Error(`redirect to ${to}`);
  },
}));

describe("the service's calls of its own work route (invoke runner, redis)", () => {
  withStore("redis", {
    URL_ALLOW_HOSTS: "127.0.0.1",
    JOBS_RUNNER: "invoke",
    CRON_SECRET: SECRET,
    SERVICE_URL: SERVICE,
    OCR_ENGINE_PROCESSES: "1",
    OCR_ENGINES: "tesseract",
  });
  /** Every call the service made to a work route, wherever it was sent (fetch is stubbed: nothing leaves). */
  const workCalls: Request[] = [];
  /** A listener standing for `evil`: every request it gets, whatever the path. */
  const evilHits: string[] = [];
  let evil: http.Server;
  let evilOrigin: string;
  let restoreFetch: () => void;

  beforeAll(async () => {
    evil = http.createServer((req, res) => {
      evilHits.push(`${req.method} ${req.url}`);
      res.writeHead(202).end();
    });
    await new Promise<void>((resolve) => evil.listen(0, "127.0.0.1", resolve));
    evilOrigin = `127.0.0.1:${(evil.address() as AddressInfo).port}`;
    const original = globalThis.fetch;
    globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const call = new Request(input, init);
      if (new URL(call.url).pathname === WORK_PATH) workCalls.push(call.clone());
      // The configured origin is a test name: answered here. Anything else (the evil listener) goes out for real.
      if (new URL(call.url).origin === SERVICE) return new Response(null, { status: 202 });
      return original(input, init);
    }) as typeof fetch;
    restoreFetch = () => {
      globalThis.fetch = original;
    };
  });
  afterAll(async () => {
    restoreFetch();
    await resetWorkQueue();
    await services().pool.terminate();
    await new Promise((resolve) => evil.close(resolve));
  });

  /** A job with a webhook (its cancel starts a work call to deliver the event), submitted with `Host: evil`. */
  const submitWithWebhook = async (account: TestAccount): Promise<JobViewBody> => {
    await rotateWebhookSecret(getStore(), account.userId);
    const response = await jobsRoute.POST(
      ocrRequest(
        { image: tinyPng("SELF 42").toString("base64"), webhook: { url: `http://127.0.0.1:9/hook` } },
        { key: account.key, url: `http://${evilOrigin}/api/ocr/jobs`, headers: { ...EVIL_HEADERS, host: evilOrigin } },
      ),
    );
    const text = await response.text();
    expect(response.status, text.slice(0, 300)).toBe(202);
    return jobViewSchema.parse(JSON.parse(text));
  };

  const waitForCalls = async (count: number) => {
    await vi.waitFor(() => expect(workCalls.length).toBeGreaterThanOrEqual(count), { timeout: 30_000 });
    // Late calls to the wrong place would show here too.
    await new Promise((resolve) => setTimeout(resolve, 300));
  };

  it("a submission and a DELETE sent with Host: evil call the configured origin; evil hears nothing", async () => {
    workCalls.length = 0;
    const account = await createAccount(10);
    const view = await submitWithWebhook(account);
    await waitForCalls(1);
    const response = await jobRoute.DELETE(
      ocrRequest(undefined, {
        key: account.key,
        method: "DELETE",
        url: `http://${evilOrigin}/api/ocr/jobs/${view.jobId}`,
        headers: { ...EVIL_HEADERS, host: evilOrigin },
      }),
    );
    expect(response.status).toBe(200);
    await waitForCalls(2);
    expect(workCalls.map((call) => new URL(call.url).origin)).toEqual(workCalls.map(() => SERVICE));
    expect(evilHits).toEqual([]);
  });

  it("the settings page's cancel action, posted with Host: evil, calls the configured origin; evil hears nothing", async () => {
    workCalls.length = 0;
    // A signed-up account (its session resolves to it), with an API key to submit the job.
    const user = await signUp(
      getStore(),
      { email: `self-${randomBytes(6).toString("hex")}@example.com`, password: "a long test password 42" },
      { env: getEnv(), operator: true },
    );
    const { key } = await createApiKey(getStore(), { userId: user.id, name: "self-origin" });
    const account: TestAccount = { userId: user.id, keyId: "", key, balance: async () => 0 };
    const view = await submitWithWebhook(account);
    await waitForCalls(1);
    workCalls.length = 0;
    request.headers = new Headers({ ...EVIL_HEADERS, host: evilOrigin, origin: `http://${evilOrigin}` });
    request.cookie = (await createSession(getStore(), account.userId)).id;
    const form = new FormData();
    form.set("jobId", view.jobId);
    await cancelJobAction(form);
    expect((await getStore().jobs.getJob(view.jobId))?.status).toBe("cancelled");
    await waitForCalls(1);
    expect(workCalls.map((call) => new URL(call.url).origin)).toEqual([SERVICE]);
    expect(workCalls[0]!.headers.get("x-work-signature")).toMatch(/^t=\d+,n=[\w-]{22},v1=[0-9a-f]{64}$/);
    expect(evilHits).toEqual([]);
  });

  it("a captured signature is accepted once: its replay is 401 with the error body; a finished job's call works nothing", async () => {
    workCalls.length = 0;
    const account = await createAccount(10);
    const view = await submitWithWebhook(account);
    await waitForCalls(1);
    const cancelled = await jobRoute.DELETE(
      ocrRequest(undefined, { key: account.key, method: "DELETE", url: `${SERVICE}/api/ocr/jobs/${view.jobId}` }),
    );
    expect(cancelled.status).toBe(200);
    const captured = workCalls[0]!.headers.get("x-work-signature")!;
    const call = () =>
      workRoute.POST(
        new Request(`${SERVICE}${WORK_PATH}`, { method: "POST", headers: { "x-work-signature": captured } }),
      );
    // The job has ended: the invocation finds nothing to read and charges nothing.
    expect((await call()).status).toBe(202);
    await expectApiError(await call(), "unauthorized");
    await expectApiError(await call(), "unauthorized");
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const job = await getStore().jobs.getJob(view.jobId);
    expect(job).toMatchObject({ status: "cancelled", pagesDone: 0, creditsUsed: 0 });
    expect(await account.balance()).toBe(10);
  });

  it("signatures: fresh ones pass once; over a minute old, altered, or another secret's do not", () => {
    const now = Date.now();
    expect(verifyWorkCall(signWorkCall(SECRET, now), SECRET, now)).toMatch(/^[\w-]{22}$/);
    expect(verifyWorkCall(signWorkCall(SECRET, now - WORK_SIGNATURE_MAX_AGE_MS - 1), SECRET, now)).toBeNull();
    expect(verifyWorkCall(signWorkCall(SECRET, now - 5 * 60_000), SECRET, now)).toBeNull();
    expect(verifyWorkCall(signWorkCall("another-secret", now), SECRET, now)).toBeNull();
    // The nonce is signed: another one under the same MAC is refused.
    const [t, , v1] = signWorkCall(SECRET, now).split(",");
    expect(verifyWorkCall(`${t},n=${"A".repeat(22)},v1=${v1!.slice(3)}`, SECRET, now)).toBeNull();
    expect(verifyWorkCall(null, SECRET, now)).toBeNull();
  });
});

describe("selfOrigin: from configuration only", () => {
  const origin = (env: Record<string, string>) => selfOrigin(parseEnv(env));
  it("SERVICE_URL, else Vercel's production URL in production and the deployment's URL elsewhere, else 127.0.0.1:PORT", () => {
    expect(origin({ SERVICE_URL: "https://ocr.example.com", VERCEL_URL: "x.vercel.app" })).toBe(
      "https://ocr.example.com",
    );
    expect(
      origin({
        VERCEL_ENV: "production",
        VERCEL_URL: "ocr-abc.vercel.app",
        VERCEL_PROJECT_PRODUCTION_URL: "ocr.example.com",
      }),
    ).toBe("https://ocr.example.com");
    expect(
      origin({
        VERCEL_ENV: "preview",
        VERCEL_URL: "ocr-abc.vercel.app",
        VERCEL_PROJECT_PRODUCTION_URL: "ocr.example.com",
      }),
    ).toBe("https://ocr-abc.vercel.app");
    expect(origin({ PORT: "4123" })).toBe("http://127.0.0.1:4123");
    expect(origin({})).toBe("http://127.0.0.1:3000");
    expect(() => parseEnv({ SERVICE_URL: "https://ocr.example.com/api" })).toThrow(/SERVICE_URL/);
    expect(() => parseEnv({ SERVICE_URL: "ftp://ocr.example.com" })).toThrow(/SERVICE_URL/);
  });

  it("the OAuth issuer and resource: SERVICE_URL when set, whatever the Host; the request's host only when not", () => {
    const forged = new Request("http://evil/.well-known/oauth-protected-resource", { headers: { host: "evil" } });
    const restore = setEnv({ SERVICE_URL: "https://ocr.example.com" });
    try {
      expect(serviceOrigin(getEnv(), forged)).toBe("https://ocr.example.com");
      expect(protectedResourceMetadata(serviceOrigin(getEnv(), forged))).toMatchObject({
        resource: "https://ocr.example.com/api/mcp",
      });
    } finally {
      restore();
    }
    const unset = setEnv({ SERVICE_URL: "" });
    try {
      expect(serviceOrigin(getEnv(), forged)).toBe("https://evil");
    } finally {
      unset();
    }
  });
});
