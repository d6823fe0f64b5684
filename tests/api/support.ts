import { randomBytes } from "node:crypto";
import dns from "node:dns";
import fs from "node:fs";
import path from "node:path";
import { createCanvas, GlobalFonts } from "@napi-rs/canvas";
import { setupServer, type SetupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, expect, vi } from "vitest";
import { z } from "zod";
import * as processRoute from "@/app/api/ocr/process/route";
import { ocrResponseSchema, type OcrResponse } from "@/lib/api/schemas";
import { getBalance, grantCredits, listLedger } from "@/lib/credits";
import { errorCodeSchema, errorStatus, type ErrorBody, type ErrorCode } from "@/lib/api/errors";
import { createApiKey } from "@/lib/keys";
import type { SettingsOverrides } from "@/lib/settings";
import { getStore, resetStore } from "@/lib/store";
import { pushEnv } from "../support/env";
import { STORE_VARIABLES, withRedisStoreEnv } from "../support/redis";
import { type Route } from "@/lib/http";

export const FIXTURE_DIR = path.resolve(import.meta.dirname, "../.generated");
const FONT_DIR = path.resolve(import.meta.dirname, "../fixtures/fonts");

export const fixture = (name: string): Buffer => fs.readFileSync(path.join(FIXTURE_DIR, name));
export const groundTruth = (name: string): string =>
  fs.readFileSync(path.join(FIXTURE_DIR, name.replace(/\.[a-z]+$/, ".gt.txt")), "utf8");
/** A fixture as an ArrayBuffer of its own (msw's `HttpResponse.arrayBuffer`). */
export const fixtureArrayBuffer = (name: string): ArrayBuffer => new Uint8Array(fixture(name)).buffer;
export const base64Of = (name: string): string => fixture(name).toString("base64");

export const ENDPOINT = "http://localhost:3000/api/ocr/process";

/**
 * The store behind a route test. Route tests run on Redis, the production store; that the memory store behaves the
 * same is the contract suite's to show (tests/store/contract.test.ts runs every case on both). A test runs on both
 * only where the store kind makes a difference of its own (the job and webhook queues: BullMQ or in memory).
 */
export type StoreKind = "memory" | "redis";

/**
 * Point `getStore()` at the memory store or at the test Redis (fresh prefix, deleted afterwards) for the tests of
 * the enclosing `describe`, with request logging off unless `extraEnv` turns it on. The configuration is installed
 * (tests/support/env.ts), never written to `process.env`.
 */
export function withStore(kind: StoreKind, extraEnv: Record<string, string> = {}): void {
  const env = { LOG_REQUESTS: "false", ...extraEnv };
  if (kind === "redis") {
    withRedisStoreEnv("api", env);
    return;
  }
  let restore = () => {};
  beforeAll(async () => {
    const unset = Object.fromEntries(STORE_VARIABLES.map((name) => [name, undefined]));
    restore = pushEnv({ ...unset, ...env });
    await resetStore();
  });
  afterAll(async () => {
    await resetStore();
    restore();
  });
}

/**
 * Put variables into the configuration for one test (installed over the file's, not written to `process.env`:
 * tests/support/env.ts); returns the restore function (call it in `finally`). Settings a route instance takes as
 * options (`createMcpRoute({ sse, toolDeadlineMs })`) are injected there instead. The OpenAPI document is built once
 * and does not follow.
 */
export function setEnv(values: Record<string, string | undefined>): () => void {
  return pushEnv(values);
}

export interface TestAccount {
  userId: string;
  keyId: string;
  key: string;
  balance(): Promise<number>;
}

/** A user with `credits` credits and one API key (no password: the key is all a REST caller has). */
export async function createAccount(credits = 100): Promise<TestAccount> {
  const userId = `usr_test${randomBytes(8).toString("hex")}`;
  if (credits > 0) await grantCredits(getStore(), { userId, credits });
  const { key, info } = await createApiKey(getStore(), { userId, name: "api tests" });
  return { userId, keyId: info.id, key, balance: () => getBalance(getStore(), userId) };
}

export interface CallOptions {
  /** API key in `x-api-key` (default), or `null` for none. */
  key?: string | null;
  headers?: Record<string, string>;
  method?: string;
  /** Send this instead of `JSON.stringify(body)`. */
  raw?: BodyInit;
  url?: string;
  /**
   * Overrides of the modules' settings for this call (short timings, small limits): the route instance is
   * `POST.with({ settings })` (lib/http/routes.ts), as a process's settings are its `main`'s arguments.
   */
  settings?: SettingsOverrides;
}

export function ocrRequest(
  body: unknown,
  { key, headers = {}, method = "POST", raw, url = ENDPOINT }: CallOptions = {},
): Request {
  const init: RequestInit & { duplex?: "half" } = {
    method,
    headers: { "content-type": "application/json", ...(key ? { "x-api-key": key } : {}), ...headers },
  };
  if (method !== "GET" && method !== "HEAD") init.body = raw ?? JSON.stringify(body);
  if (init.body instanceof ReadableStream) init.duplex = "half";
  return new Request(url, init);
}

/** Call the route's handler for `method` directly, as Next would. */
export async function callOcr(body: unknown, options: CallOptions = {}): Promise<Response> {
  const method = (options.method ?? "POST").toUpperCase();
  const handlers: Record<string, Route> = {
    POST: processRoute.POST,
    GET: processRoute.GET,
    HEAD: processRoute.HEAD,
    PUT: processRoute.PUT,
    PATCH: processRoute.PATCH,
    DELETE: processRoute.DELETE,
    OPTIONS: processRoute.OPTIONS,
  };
  const handler = handlers[method];
  if (!handler) throw new Error(`no handler for ${method}`);
  const request = ocrRequest(body, { ...options, method });
  return options.settings ? handler.with({ settings: options.settings })(request) : handler(request);
}

export const REQUEST_ID = /^req_[A-Za-z0-9_-]{22}$/;

function expectCommonHeaders(response: Response): string {
  const requestId = response.headers.get("x-request-id");
  expect(requestId).toMatch(REQUEST_ID);
  expect(response.headers.get("access-control-allow-origin")).toBe("*");
  expect(response.headers.get("access-control-expose-headers")).toContain("x-request-id");
  return requestId!;
}

/**
 * The whole error body, exactly: `{ success: false, error: { code, message }, requestId }` and nothing else, the
 * status from the error catalogue, `x-request-id` equal to the body's request id, and CORS.
 */
export async function expectApiError(response: Response, code: ErrorCode, message?: RegExp): Promise<ErrorBody> {
  const requestId = expectCommonHeaders(response);
  const text = await response.text();
  expect({ status: response.status, code: tryCode(text) }).toEqual({ status: errorStatus[code], code });
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const body = z
    .strictObject({
      success: z.literal(false),
      error: z.strictObject({ code: errorCodeSchema, message: z.string().min(1).max(600) }),
      requestId: z.literal(requestId),
    })
    .parse(JSON.parse(text));
  if (message) expect(body.error.message).toMatch(message);
  return body;
}

function tryCode(text: string): unknown {
  try {
    return (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;
  } catch {
    return `(not JSON: ${text.slice(0, 80)})`;
  }
}

/** A 200 with exactly the response schema's fields, its headers, and `x-request-id` equal to the body's. */
export async function expectOcrOk(response: Response): Promise<OcrResponse> {
  const requestId = expectCommonHeaders(response);
  const text = await response.text();
  expect(response.status, text.slice(0, 300)).toBe(200);
  const body = ocrResponseSchema.strict().parse(JSON.parse(text));
  expect(body.requestId).toBe(requestId);
  expect(response.headers.get("x-credits-remaining")).toMatch(/^\d+$/);
  expect(response.headers.get("ratelimit-limit")).toMatch(/^\d+$/);
  expect(response.headers.get("ratelimit-remaining")).toMatch(/^\d+$/);
  expect(response.headers.get("ratelimit-reset")).toMatch(/^\d+$/);
  return body;
}

/** Sum of the account's ledger deltas equals its balance (every change is an entry). */
export async function expectLedgerConsistent(account: TestAccount): Promise<void> {
  const { entries } = await listLedger(getStore(), account.userId, { limit: 100 });
  expect(entries.reduce((sum, entry) => sum + entry.delta, 0)).toBe(await account.balance());
}

let fontRegistered = false;

/** A small PNG with `text` in a committed font: cheap to OCR (~0.1 s warm). */
export function tinyPng(text = "HELLO 42", width = 360, height = 80): Buffer {
  if (!fontRegistered) {
    GlobalFonts.registerFromPath(path.join(FONT_DIR, "LiberationSans-Regular.ttf"), "Api Test Sans");
    fontRegistered = true;
  }
  const canvas = createCanvas(width, height);
  const context = canvas.getContext("2d");
  context.fillStyle = "#ffffff";
  context.fillRect(0, 0, width, height);
  context.fillStyle = "#000000";
  context.font = `${Math.round(height * 0.45)}px "Api Test Sans"`;
  context.fillText(text, 16, Math.round(height * 0.68));
  return canvas.toBuffer("image/png");
}

/** DNS for the tests: a table. Unknown names fail like getaddrinfo. */
export const TEST_DNS: Record<string, string[]> = {
  "files.example": ["93.184.216.34"],
  "cdn.example": ["93.184.216.35"],
  "intranet.example": ["10.0.0.5"],
};

/**
 * msw for remote files (`imageUrl`), with every unhandled request an error (a callback, because msw's built-in
 * strategies let `*.png` / `*.pdf` through as "common assets"), and DNS answered from {@link TEST_DNS}.
 */
export function withRemoteFiles(): SetupServer {
  const server = setupServer();
  const unhandled: string[] = [];
  beforeAll(() => {
    server.listen({
      onUnhandledFrame: ({ frame }) => {
        throw new Error(`unhandled network frame ${frame.constructor.name}`);
      },
    });
    server.events.on("request:unhandled", ({ request }) => {
      unhandled.push(`${request.method} ${request.url}`);
    });
    vi.spyOn(dns.promises, "lookup").mockImplementation((async (hostname: string) => {
      const answers = TEST_DNS[hostname];
      if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
      return answers.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
    }) as unknown as typeof dns.promises.lookup);
  });
  afterEach(() => {
    server.resetHandlers();
    expect(unhandled.splice(0)).toEqual([]);
  });
  afterAll(() => {
    server.close();
    vi.restoreAllMocks();
  });
  return server;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
