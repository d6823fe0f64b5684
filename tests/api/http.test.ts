import { describe, expect, it, vi } from "vitest";
import * as mcpRoute from "@/app/api/mcp/route";
import * as openapiRoute from "@/app/api/openapi.json/route";
import { ApiError } from "@/lib/api/errors";
import {
  CORS_ALLOW_HEADERS,
  CORS_EXPOSE_HEADERS,
  MAX_JSON_DEPTH,
  isFinalOutcome,
  isJsonContentType,
  maxBodyBytes,
  readApiKey,
  requestBody,
  withApiKey,
} from "@/lib/http";
import { assertJsonDepth } from "@/lib/http/body";
import { rpcRequest } from "../mcp/support";
import {
  ENDPOINT,
  REQUEST_ID,
  base64Of,
  callOcr,
  createAccount,
  expectApiError,
  expectOcrOk,
  setEnv,
  tinyPng,
  withStore,
} from "./support";
import { getEnv } from "@/lib/env";

withStore("memory");

const MiB = 1024 * 1024;

async function apiError(promise: Promise<unknown>): Promise<ApiError> {
  const outcome = await promise.then(
    () => new Error("expected an ApiError"),
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(ApiError);
  return outcome as ApiError;
}

/** One-shot reads, as a handler's `ApiContext.body` does them. */
const readBody = (req: Request, options?: { maxBytes?: number }) =>
  requestBody(req, { env: getEnv(), ...options }).bytes();
const readJson = (req: Request, options?: { maxBytes?: number }) =>
  requestBody(req, { env: getEnv(), ...options }).json();

function post(body: BodyInit | null, headers: Record<string, string> = {}): Request {
  const init: RequestInit & { duplex?: "half" } = {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  };
  if (body instanceof ReadableStream) init.duplex = "half";
  return new Request(ENDPOINT, init);
}

describe("CORS and methods", () => {
  it("answers the preflight with 204 and the documented lists, without a key", async () => {
    const response = await callOcr(undefined, {
      method: "OPTIONS",
      key: null,
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "x-api-key, content-type",
      },
    });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    expect(Object.fromEntries([...response.headers].filter(([name]) => name !== "x-request-id"))).toEqual({
      "access-control-allow-origin": "*",
      "access-control-allow-methods": "POST, OPTIONS",
      "access-control-allow-headers":
        "content-type, authorization, x-api-key, mcp-session-id, mcp-protocol-version, last-event-id, idempotency-key, prefer",
      "access-control-expose-headers":
        "mcp-session-id, x-request-id, ratelimit-limit, ratelimit-remaining, ratelimit-reset, retry-after, x-credits-remaining, location, link, preference-applied",
      "access-control-max-age": "86400",
      allow: "POST, OPTIONS",
    });
    expect(response.headers.get("x-request-id")).toMatch(REQUEST_ID);
    expect(CORS_ALLOW_HEADERS).toHaveLength(8);
    expect(CORS_EXPOSE_HEADERS).toContain("retry-after");
  });

  it.each(["GET", "HEAD", "PUT", "PATCH", "DELETE"])("%s /api/ocr/process → 405 with Allow", async (method) => {
    const response = await callOcr(method === "GET" || method === "HEAD" ? undefined : { image: "AAAA" }, { method });
    expect(response.headers.get("allow")).toBe("POST, OPTIONS");
    await expectApiError(response, "method_not_allowed", new RegExp(`${method} is not allowed`));
  });

  it.each(["POST", "PUT", "PATCH", "DELETE"] as const)("%s /api/openapi.json → 405 with Allow", async (method) => {
    const response = await openapiRoute[method](new Request("http://localhost:3000/api/openapi.json", { method }));
    expect(response.headers.get("allow")).toBe("GET, OPTIONS");
    await expectApiError(response, "method_not_allowed");
  });

  it("CORS and a fresh request id on every response; an incoming x-request-id is not reused", async () => {
    const account = await createAccount(5);
    const responses = [
      await callOcr({ image: "AAAA" }, { key: null, headers: { "x-request-id": "req_mine" } }),
      await callOcr({}, { key: account.key, headers: { "x-request-id": "req_mine" } }),
      await callOcr(
        { image: tinyPng().toString("base64") },
        { key: account.key, headers: { "x-request-id": "req_mine" } },
      ),
    ];
    const ids = responses.map((response) => response.headers.get("x-request-id"));
    for (const response of responses) expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(ids.every((id) => REQUEST_ID.test(id ?? ""))).toBe(true);
    expect(new Set(ids).size).toBe(3);
    expect(ids).not.toContain("req_mine");
    await expectOcrOk(responses[2]!);
  });
});

describe("readJson and readBody", () => {
  it("sizes the body for a MAX_INLINE_BYTES file (20 MiB self-hosted): as base64 plus 64 KiB, multipart plus 64 KiB, raw as is (issue 29 point 8)", () => {
    expect(maxBodyBytes(3 * MiB)).toBe(4 * MiB + 64 * 1024);
    expect(maxBodyBytes(getEnv().MAX_INLINE_BYTES)).toBe(Math.ceil((20 * MiB * 4) / 3) + 64 * 1024);
    expect(maxBodyBytes(getEnv().MAX_INLINE_BYTES, "multipart")).toBe(20 * MiB + 64 * 1024);
    expect(maxBodyBytes(getEnv().MAX_INLINE_BYTES, "file")).toBe(20 * MiB);
  });

  it.each([
    [null, true],
    ["application/json", true],
    ["application/json; charset=utf-8", true],
    ["Application/JSON", true],
    ["application/vnd.api+json", true],
    ["text/plain;charset=UTF-8", false],
    ["application/x-www-form-urlencoded", false],
    ["multipart/form-data; boundary=x", false],
    ["application/jsonp", false],
  ])("Content-Type %s → JSON: %s", (type, ok) => {
    expect(isJsonContentType(type)).toBe(ok);
  });

  it("refuses a declared Content-Length over the limit without reading the body", async () => {
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(1024));
      },
    });
    const req = post(stream, { "content-length": String(10 * MiB) });
    const error = await apiError(readBody(req, { maxBytes: 1024 * 1024 }));
    expect(error.code).toBe("payload_too_large");
    expect(pulled).toBeLessThanOrEqual(1);
  });

  it("stops reading a streamed body at the limit", async () => {
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(64 * 1024));
      },
    });
    const error = await apiError(readBody(post(stream), { maxBytes: 256 * 1024 }));
    expect(error.code).toBe("payload_too_large");
    expect(pulled).toBeLessThan(10);
  });

  it("reads the body once: the idempotency fingerprint and the handler see the same bytes", async () => {
    const body = requestBody(post('{"image":"AAAA"}', { "content-type": "application/json" }), { env: getEnv() });
    const first = await body.bytes();
    expect(await body.bytes()).toBe(first);
    expect(await body.json()).toEqual({ image: "AAAA" });
  });

  it("accepts a body at the limit and refuses one byte more", async () => {
    const limit = 1000;
    const exact = `{"image":"${"A".repeat(limit - 12)}"}`;
    expect(exact.length).toBe(limit);
    expect(await readJson(post(exact), { maxBytes: limit })).toEqual({ image: "A".repeat(limit - 12) });
    expect((await apiError(readJson(post(`${exact} `), { maxBytes: limit }))).code).toBe("payload_too_large");
  });

  it("415 for a declared non-JSON type, 400 for empty, bad UTF-8 and bad JSON", async () => {
    expect((await apiError(readJson(post("{}", { "content-type": "text/plain" })))).code).toBe(
      "unsupported_media_type",
    );
    expect((await apiError(readJson(post("")))).message).toMatch(/empty/);
    // fetch() labels a string body text/plain unless told otherwise: the message says what to send.
    const unlabeled = new Request(ENDPOINT, { method: "POST", body: "{}" });
    expect((await apiError(readJson(unlabeled))).message).toMatch(
      /Content-Type: application\/json \(got text\/plain\)/,
    );
    expect((await apiError(readJson(post(Uint8Array.from([0x22, 0xc3, 0x28, 0x22]))))).message).toMatch(/UTF-8/);
    expect((await apiError(readJson(post('{"a":')))).message).toMatch(/not valid JSON/);
  });

  it(`counts nesting outside strings only, up to ${MAX_JSON_DEPTH} levels`, () => {
    const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
    expect(() => assertJsonDepth(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).not.toThrow();
    expect(() => assertJsonDepth(nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)).toThrow(/nested more than/);
    expect(() => assertJsonDepth(JSON.stringify({ image: "[[[[[[[[[[".repeat(100) }), 4)).not.toThrow();
    expect(() => assertJsonDepth(JSON.stringify({ a: 'quote \\" and [[[[', b: "\\\\" }), 2)).not.toThrow();
    expect(() => assertJsonDepth(`{"a":"\\\\"}${"[".repeat(5)}`, 4)).toThrow();
    expect(() => assertJsonDepth('{"unterminated": "[[[[[', 1)).not.toThrow();
  });
});

describe("keys and idempotency rules", () => {
  it("reads x-api-key first, then Authorization: Bearer; empty headers are absent", () => {
    const headers = (values: Record<string, string>) => new Headers(values);
    expect(readApiKey(headers({ "x-api-key": "a", authorization: "Bearer b" }))).toBe("a");
    expect(readApiKey(headers({ "x-api-key": "  ", authorization: "bearer b" }))).toBe("b");
    expect(readApiKey(headers({ authorization: "Bearer  c " }))).toBe("c");
    expect(readApiKey(headers({ authorization: "Basic abc" }))).toBeNull();
    expect(readApiKey(headers({ authorization: "Bearer a b" }))).toBeNull();
    expect(readApiKey(headers({}))).toBeNull();
    // The query parameter only when the route asks for it (`/api/mcp`), and after both headers.
    const url = "http://localhost:3000/api/mcp?api_key=q";
    expect(readApiKey(headers({}), url)).toBe("q");
    expect(readApiKey(headers({ authorization: "Bearer b" }), url)).toBe("b");
    expect(readApiKey(headers({}), "http://localhost:3000/api/mcp?api_key=")).toBeNull();
  });

  it("withApiKey accepts the api_key query parameter only when told to", async () => {
    const account = await createAccount(1);
    const handler = withApiKey(async ({ account: who }) => Response.json({ userId: who.userId }), {
      acceptQueryKey: true,
    });
    const response = await handler(
      new Request(`http://localhost:3000/api/mcp?api_key=${account.key}`, { method: "POST" }),
    );
    expect(await response.json()).toEqual({ userId: account.userId });
    const strict = withApiKey(async () => Response.json({}));
    await expectApiError(
      await strict(new Request(`http://localhost:3000/api/x?api_key=${account.key}`, { method: "POST" })),
      "unauthorized",
    );
  });

  it("stores 2xx and final client errors; not 402, 409, 429 or any 5xx", () => {
    const stored = [200, 201, 400, 413, 415, 422].map(isFinalOutcome);
    const notStored = [402, 408, 409, 429, 500, 502, 503, 504].map(isFinalOutcome);
    expect(stored.every(Boolean)).toBe(true);
    expect(notStored.some(Boolean)).toBe(false);
  });
});

describe("request log", () => {
  it("one line per request with ids, status, pages and time; never the key or the file", async () => {
    const restore = setEnv({ LOG_REQUESTS: "true" });
    const info = vi.spyOn(console, "info").mockImplementation(() => undefined);
    try {
      const account = await createAccount(5);
      const image = base64Of("small-text.png");
      const ok = await callOcr({ image }, { key: account.key });
      const okBody = await expectOcrOk(ok);
      const denied = await callOcr({ image }, { key: `${account.key.slice(0, -3)}zzz` });
      await expectApiError(denied, "unauthorized");
      const lines = info.mock.calls.map((call) => call.map(String).join(" "));
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(
        new RegExp(
          `^api request_id=${okBody.requestId} key_id=${account.keyId} method=POST path=/api/ocr/process status=200 pages=1 ms=\\d+$`,
        ),
      );
      expect(lines[1]).toMatch(/ key_id=- .* status=401 pages=0 ms=\d+ code=unauthorized$/);
      for (const line of lines) {
        expect(line).not.toContain(account.key.slice(4, 20));
        expect(line).not.toContain(image.slice(0, 40));
      }
    } finally {
      info.mockRestore();
      restore();
    }
  });

  it("an MCP tool error is a 200 whose line carries the tool error's code", async () => {
    const restore = setEnv({ LOG_REQUESTS: "true" });
    const info = vi.spyOn(console, "info").mockImplementation(() => undefined);
    try {
      const account = await createAccount(0);
      const call = {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: {
          name: "extract_text",
          arguments: { image_source: { type: "base64", data: base64Of("small-text.png") } },
        },
      };
      const response = await mcpRoute.POST(rpcRequest(call, { key: account.key }));
      expect(response.status).toBe(200);
      expect(JSON.stringify(await response.json())).toContain('"isError":true');
      const lines = info.mock.calls.map((args) => args.map(String).join(" "));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `^api request_id=req_\\S+ key_id=${account.keyId} method=POST path=/api/mcp status=200 pages=0 ms=\\d+ code=insufficient_credits$`,
        ),
      );
    } finally {
      info.mockRestore();
      restore();
    }
  });

  it("is silent when LOG_REQUESTS is off", async () => {
    const info = vi.spyOn(console, "info").mockImplementation(() => undefined);
    try {
      await callOcr({}, { key: null });
      expect(info).not.toHaveBeenCalled();
    } finally {
      info.mockRestore();
    }
  });
});
