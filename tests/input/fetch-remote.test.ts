import { gzipSync } from "node:zlib";
import { http, HttpResponse } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ApiError, type ErrorCode } from "@/lib/api/errors";
import { configuredAllowList, fetchRemoteFile, type FetchRemoteOptions, type ResolveHost } from "@/lib/input";
import packageJson from "@/package.json";
import { SERVICE_VERSION } from "@/lib/version";
import { getEnv } from "@/lib/env";

/*
 * The remote side is msw. fetchRemoteFile speaks node:http(s), which msw 3 intercepts below the request (its
 * ClientRequest interceptor hands the request a mocked socket), so these tests run the real request code:
 * header handling, redirects, streaming, limits, timeouts. msw's socket ignores our pinned `lookup`, so
 * the connection-pinning itself is proven against real servers in fetch-remote-pinning.test.ts.
 */

const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);

/** DNS is the outside world: a table stands in for it. Unknown names fail like getaddrinfo does. */
const DNS: Record<string, string[]> = {
  "files.example": ["93.184.216.34"],
  "cdn.example": ["2606:4700::1111"],
  "hop1.example": ["1.1.1.1"],
  "hop2.example": ["8.8.8.8"],
  "intranet.example": ["10.0.0.5"],
  "metadata.example": ["169.254.169.254"],
  "mixed.example": ["93.184.216.34", "10.0.0.5"],
  "mapped.example": ["::ffff:127.0.0.1"],
};
const resolveHost = vi.fn<ResolveHost>(async (hostname) => {
  const answers = DNS[hostname];
  if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  return answers.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
});

const fetchFile = (url: string, options: Partial<FetchRemoteOptions> = {}) =>
  fetchRemoteFile(url, {
    resolveHost,
    maxBytes: getEnv().MAX_URL_BYTES,
    allowHosts: configuredAllowList(getEnv()),
    ...options,
  });

async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const outcome = await promise.then(
    () => new Error("expected an ApiError, got a result"),
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(ApiError);
  return outcome as ApiError;
}

async function expectFailure(promise: Promise<unknown>, code: ErrorCode, status: number, message?: RegExp) {
  const error = await failure(promise);
  expect({ code: error.code, status: error.status }).toEqual({ code, status });
  if (message) expect(error.message).toMatch(message);
  return error;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const server = setupServer();
const unhandled: string[] = [];

beforeAll(() => {
  // A callback rather than "error": the built-in strategies let unhandled `*.png` / `*.pdf` requests through
  // as "common assets", which here would mean the real network.
  server.listen({
    onUnhandledFrame: ({ frame }) => {
      throw new Error(`unhandled network frame ${frame.constructor.name}`);
    },
  });
  server.events.on("request:unhandled", ({ request }) => {
    unhandled.push(`${request.method} ${request.url}`);
  });
});
afterEach(() => {
  server.resetHandlers();
  resolveHost.mockClear();
  vi.restoreAllMocks();
  // Every request a test made reached a handler: no test passes because an unmatched request failed.
  expect(unhandled.splice(0)).toEqual([]);
});
afterAll(() => server.close());

describe("fetchRemoteFile: success", () => {
  it("returns the bytes, content type and final URL of a 200", async () => {
    const seen: Request[] = [];
    server.use(
      http.get("http://files.example/scans/page.png", ({ request }) => {
        seen.push(request);
        return HttpResponse.arrayBuffer(PNG.slice().buffer, { headers: { "content-type": "image/png" } });
      }),
    );
    const fetchSpy = vi.spyOn(globalThis, "fetch");

    const file = await fetchFile("http://files.example/scans/page.png?token=secret#frag");

    expect([...file.bytes]).toEqual([...PNG]);
    expect(file.bytes).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(file.bytes)).toBe(false);
    expect(file.contentType).toBe("image/png");
    expect(file.finalUrl).toBe("http://files.example/scans/page.png?token=secret#frag");
    expect(resolveHost).toHaveBeenCalledExactlyOnceWith("files.example");
    // node:http, not the global fetch, carries the request.
    expect(fetchSpy).not.toHaveBeenCalled();

    const request = seen[0]!;
    expect(new URL(request.url).search).toBe("?token=secret");
    expect(request.headers.get("user-agent")).toBe(`ocr-service/${SERVICE_VERSION} (+fetch)`);
    expect(SERVICE_VERSION).toBe(packageJson.version);
    expect(request.headers.get("accept")).toBe("application/pdf,image/*;q=0.9,*/*;q=0.5");
    expect(request.headers.get("accept-encoding")).toBe("identity");
    expect(request.headers.get("host")).toBe("files.example");
  });

  it("fetches over https from a host with an IPv6 address, keeping a non-default port", async () => {
    server.use(http.get("https://cdn.example:8443/a.pdf", () => HttpResponse.text("%PDF-1.7")));
    const file = await fetchFile("https://cdn.example:8443/a.pdf");
    expect(Buffer.from(file.bytes).toString()).toBe("%PDF-1.7");
    expect(file.contentType).toMatch(/^text\/plain/);
  });

  it("fetches from a public IP literal without asking DNS", async () => {
    server.use(http.get("http://93.184.216.34/x", () => HttpResponse.arrayBuffer(PNG.slice().buffer)));
    const file = await fetchFile("http://93.184.216.34/x");
    expect(file.bytes.length).toBe(PNG.length);
    expect(resolveHost).not.toHaveBeenCalled();
  });

  it("returns an empty body as zero bytes", async () => {
    server.use(http.get("http://files.example/empty", () => new HttpResponse(null, { status: 200 })));
    expect((await fetchFile("http://files.example/empty")).bytes.length).toBe(0);
  });

  it("accepts a body exactly at the limit", async () => {
    server.use(http.get("http://files.example/at-limit", () => HttpResponse.arrayBuffer(new ArrayBuffer(1024))));
    expect((await fetchFile("http://files.example/at-limit", { maxBytes: 1024 })).bytes.length).toBe(1024);
  });
});

describe("fetchRemoteFile: redirects", () => {
  it("follows a chain of 3 (relative, absolute, cross-host) and re-resolves every new host", async () => {
    server.use(
      http.get(
        "http://files.example/start",
        () => new HttpResponse(null, { status: 301, headers: { location: "/second" } }),
      ),
      http.get("http://files.example/second", () => HttpResponse.redirect("http://hop1.example/third", 302)),
      http.get("http://hop1.example/third", () => HttpResponse.redirect("https://hop2.example/final.png?sig=1", 307)),
      http.get("https://hop2.example/final.png", () =>
        HttpResponse.arrayBuffer(PNG.slice().buffer, { headers: { "content-type": "image/png" } }),
      ),
    );
    const file = await fetchFile("http://files.example/start");
    expect([...file.bytes]).toEqual([...PNG]);
    expect(file.finalUrl).toBe("https://hop2.example/final.png?sig=1");
    expect(resolveHost.mock.calls.map(([host]) => host)).toEqual([
      "files.example",
      "files.example",
      "hop1.example",
      "hop2.example",
    ]);
  });

  it.each([301, 302, 303, 307, 308])("follows %i", async (status) => {
    server.use(
      http.get("http://files.example/old", () => HttpResponse.redirect("http://files.example/new", status)),
      http.get("http://files.example/new", () => HttpResponse.arrayBuffer(PNG.slice().buffer)),
    );
    expect((await fetchFile("http://files.example/old")).finalUrl).toBe("http://files.example/new");
  });

  it("gives up after 3 redirects: the 4th is 502 fetch_failed", async () => {
    let requests = 0;
    server.use(
      http.get("http://files.example/loop/:n", ({ params }) => {
        requests++;
        return HttpResponse.redirect(`http://files.example/loop/${Number(params.n) + 1}`, 302);
      }),
    );
    await expectFailure(fetchFile("http://files.example/loop/0"), "fetch_failed", 502, /too many redirects/);
    expect(requests).toBe(4); // the first request and 3 followed redirects; the 4th redirect is not followed
  });

  it("honours maxRedirects: 0", async () => {
    server.use(http.get("http://files.example/old", () => HttpResponse.redirect("http://files.example/new", 302)));
    await expectFailure(
      fetchFile("http://files.example/old", { maxRedirects: 0 }),
      "fetch_failed",
      502,
      /too many redirects/,
    );
  });

  it.each([
    ["a loopback literal", "http://127.0.0.1/"],
    ["a loopback literal with a port", "http://127.0.0.1:8080/admin"],
    ["a decimal loopback literal", "http://2130706433/"],
    ["an IPv6 loopback literal", "http://[::1]/"],
    ["an IPv4-mapped loopback literal", "http://[::ffff:127.0.0.1]/"],
    ["the cloud metadata address", "http://169.254.169.254/latest/meta-data/"],
    ["localhost", "http://localhost/"],
    ["a name that resolves to 10.0.0.5", "http://intranet.example/"],
    ["a name that resolves to the metadata address", "http://metadata.example/"],
    ["a name with one private address among public ones", "http://mixed.example/"],
    ["a name that resolves to an IPv4-mapped loopback", "http://mapped.example/"],
  ])("refuses a redirect to %s with 400 invalid_request, without requesting it", async (_name, location) => {
    server.use(http.get("http://files.example/start", () => HttpResponse.redirect(location, 302)));
    const error = await expectFailure(
      fetchFile("http://files.example/start"),
      "invalid_request",
      400,
      /^URL not allowed: /,
    );
    expect(error.message).toMatch(/after a redirect/);
    // No handler exists for the target: had it been requested, afterEach would find it unhandled.
  });

  it.each([
    ["ftp", "ftp://files.example/a.png", 400],
    ["file", "file:///etc/passwd", 400],
    ["credentials", "http://user:pass@files.example/a.png", 400],
  ])("refuses a redirect to a %s URL with 400", async (_name, location, status) => {
    server.use(http.get("http://files.example/start", () => HttpResponse.redirect(location, 302)));
    await expectFailure(fetchFile("http://files.example/start"), "invalid_request", status);
  });

  it("is 502 when a redirect has no Location", async () => {
    server.use(http.get("http://files.example/start", () => new HttpResponse(null, { status: 302 })));
    await expectFailure(fetchFile("http://files.example/start"), "fetch_failed", 502, /without a Location/);
  });
});

describe("fetchRemoteFile: upstream failures are 502 fetch_failed", () => {
  it.each([404, 403, 410, 500, 503])("HTTP %i", async (status) => {
    server.use(http.get("http://files.example/missing.png", () => new HttpResponse("nope", { status })));
    await expectFailure(
      fetchFile("http://files.example/missing.png"),
      "fetch_failed",
      502,
      new RegExp(`HTTP ${status}`),
    );
  });

  it("a 304 or other non-redirect 3xx", async () => {
    server.use(http.get("http://files.example/a.png", () => new HttpResponse(null, { status: 304 })));
    await expectFailure(fetchFile("http://files.example/a.png"), "fetch_failed", 502, /HTTP 304/);
  });

  it("DNS failure", async () => {
    await expectFailure(
      fetchFile("http://nowhere.example/a.png"),
      "fetch_failed",
      502,
      /could not resolve nowhere\.example/,
    );
  });

  it("DNS answering nothing", async () => {
    await expectFailure(
      fetchFile("http://files.example/a.png", { resolveHost: async () => [] }),
      "fetch_failed",
      502,
      /could not resolve/,
    );
  });

  it("a network error while connecting", async () => {
    server.use(http.get("http://files.example/a.png", () => HttpResponse.error()));
    await expectFailure(fetchFile("http://files.example/a.png"), "fetch_failed", 502, /^Could not fetch imageUrl: /);
  });

  it("never puts the query string into the message", async () => {
    server.use(http.get("http://files.example/a.png", () => new HttpResponse(null, { status: 404 })));
    const error = await failure(fetchFile("http://files.example/a.png?X-Amz-Signature=s3cr3t"));
    expect(error.message).not.toContain("s3cr3t");
    expect(error.message).not.toContain("a.png");
  });
});

describe("fetchRemoteFile: URLs refused before any request (400 invalid_request)", () => {
  it.each([
    ["ftp://", "ftp://files.example/a.png"],
    ["file://", "file:///etc/passwd"],
    ["data:", "data:image/png;base64,AAAA"],
    ["javascript:", "javascript:alert(1)"],
    ["gopher://", "gopher://files.example:70/_x"],
    ["user and password", "http://user:pass@files.example/a.png"],
    ["user only", "https://user@files.example/a.png"],
    ["not a URL", "files.example/a.png"],
    ["empty", ""],
    ["IPv6 zone id", "http://[fe80::1%25eth0]/"],
    ["http://2130706433/", "http://2130706433/"],
    ["http://0177.0.0.1/", "http://0177.0.0.1/"],
    ["http://0x7f000001/", "http://0x7f000001/"],
    ["http://127.1/", "http://127.1/"],
    ["http://[::ffff:127.0.0.1]/", "http://[::ffff:127.0.0.1]/"],
    ["http://[::1]/", "http://[::1]/"],
    ["http://0.0.0.0/", "http://0.0.0.0/"],
    ["http://10.1.2.3/", "http://10.1.2.3/"],
    ["http://192.168.1.1:8080/", "http://192.168.1.1:8080/"],
    ["http://[fd00::1]/", "http://[fd00::1]/"],
    ["http://localhost/", "http://localhost/"],
    ["http://localhost./", "http://localhost./"],
    ["http://app.localhost/", "http://app.localhost/"],
    ["a name resolving to 10.0.0.5", "http://intranet.example/a.png"],
    ["a name resolving to a mix", "https://mixed.example/a.png"],
  ])("%s", async (_name, url) => {
    await expectFailure(fetchFile(url), "invalid_request", 400);
    // Hosts that are literals or localhost never reach DNS; names are resolved once and refused.
    expect(resolveHost.mock.calls.length).toBeLessThanOrEqual(1);
  });

  it("says which host resolves to a private address", async () => {
    await expectFailure(
      fetchFile("http://intranet.example/a.png?key=1"),
      "invalid_request",
      400,
      /^URL not allowed: intranet\.example resolves to a private address$/,
    );
  });

  it("refuses localhost with the system resolver too", async () => {
    await expectFailure(
      fetchRemoteFile("http://localhost/a.png", {
        allowHosts: configuredAllowList(getEnv()),
        maxBytes: getEnv().MAX_URL_BYTES,
      }),
      "invalid_request",
      400,
    );
  });
});

describe("fetchRemoteFile: size limit (413 payload_too_large)", () => {
  it("refuses a Content-Length over the limit without reading the body", async () => {
    let pulls = 0;
    server.use(
      http.get("http://files.example/big.pdf", () => {
        // A body that would never end: if the client waited for it, the test would run into the timeout.
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            pulls++;
            await sleep(50);
            controller.enqueue(new Uint8Array(16));
          },
        });
        return new HttpResponse(body, { headers: { "content-length": String(10 * 1024 * 1024) } });
      }),
    );
    await expectFailure(
      fetchFile("http://files.example/big.pdf", { maxBytes: 1024 * 1024, timeoutMs: 5000 }),
      "payload_too_large",
      413,
      /larger than the 1 MB limit/,
    );
    // Refused from Content-Length: at most the first chunk was pulled before the body was dropped.
    expect(pulls).toBeLessThanOrEqual(2);
  });

  it("stops reading a chunked body as soon as it passes the limit", async () => {
    let sent = 0;
    const chunk = new Uint8Array(16 * 1024).fill(7);
    server.use(
      http.get("http://files.example/endless.png", () => {
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            await sleep(1);
            sent += chunk.length;
            controller.enqueue(chunk);
          },
        });
        return new HttpResponse(body, { headers: { "content-type": "image/png" } }); // no Content-Length
      }),
    );
    const maxBytes = 256 * 1024;
    await expectFailure(
      fetchFile("http://files.example/endless.png", { maxBytes, timeoutMs: 10_000 }),
      "payload_too_large",
      413,
    );
    const sentWhenStopped = sent;
    await sleep(200);
    // It stopped early: a little past the limit was produced (stream read-ahead), and nothing more after.
    expect(sentWhenStopped).toBeGreaterThan(maxBytes);
    expect(sentWhenStopped).toBeLessThan(maxBytes * 4);
    expect(sent - sentWhenStopped).toBeLessThanOrEqual(chunk.length * 2);
  });

  it("decodes a gzip body a server sends anyway", async () => {
    server.use(
      http.get("http://files.example/a.png", () =>
        HttpResponse.arrayBuffer(new Uint8Array(gzipSync(PNG)).buffer, { headers: { "content-encoding": "gzip" } }),
      ),
    );
    expect([...(await fetchFile("http://files.example/a.png")).bytes]).toEqual([...PNG]);
  });

  it("caps the decoded size of a gzip bomb", async () => {
    const bomb = new Uint8Array(gzipSync(new Uint8Array(64 * 1024 * 1024))); // 64 MiB of zeros in ~64 KB
    expect(bomb.length).toBeLessThan(1024 * 1024);
    server.use(
      http.get("http://files.example/bomb.png", () =>
        HttpResponse.arrayBuffer(bomb.buffer, { headers: { "content-encoding": "gzip" } }),
      ),
    );
    const heapBefore = process.memoryUsage().arrayBuffers;
    await expectFailure(
      fetchFile("http://files.example/bomb.png", { maxBytes: 1024 * 1024 }),
      "payload_too_large",
      413,
    );
    expect(process.memoryUsage().arrayBuffers - heapBefore).toBeLessThan(32 * 1024 * 1024);
  });

  it("is 502 for a corrupt gzip body", async () => {
    server.use(
      http.get("http://files.example/a.png", () =>
        HttpResponse.arrayBuffer(PNG.slice().buffer, { headers: { "content-encoding": "gzip" } }),
      ),
    );
    await expectFailure(fetchFile("http://files.example/a.png"), "fetch_failed", 502);
  });

  it("is 502 for a content-encoding it cannot decode", async () => {
    server.use(
      http.get("http://files.example/a.png", () =>
        HttpResponse.arrayBuffer(PNG.slice().buffer, { headers: { "content-encoding": "compress" } }),
      ),
    );
    await expectFailure(fetchFile("http://files.example/a.png"), "fetch_failed", 502, /content-encoding compress/);
  });
});

describe("fetchRemoteFile: timeouts and the caller's deadline", () => {
  it("is 502 fetch_failed when the headers are slower than timeoutMs", async () => {
    server.use(
      http.get("http://files.example/slow", async () => {
        await sleep(2000);
        return HttpResponse.arrayBuffer(PNG.slice().buffer);
      }),
    );
    await expectFailure(
      fetchFile("http://files.example/slow", { timeoutMs: 150 }),
      "fetch_failed",
      502,
      /timed out after 0\.15 s/,
    );
  });

  it("is 502 fetch_failed when the body trickles past timeoutMs", async () => {
    server.use(
      http.get("http://files.example/trickle.png", () => {
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            controller.enqueue(new Uint8Array(8));
            await sleep(100);
          },
        });
        return new HttpResponse(body, { headers: { "content-type": "image/png" } });
      }),
    );
    await expectFailure(
      fetchFile("http://files.example/trickle.png", { timeoutMs: 400 }),
      "fetch_failed",
      502,
      /timed out after 0\.4 s/,
    );
  });

  it("is 502 when DNS is slower than timeoutMs", async () => {
    const slowDns: ResolveHost = () => new Promise(() => {});
    await expectFailure(
      fetchFile("http://files.example/a.png", { timeoutMs: 100, resolveHost: slowDns }),
      "fetch_failed",
      502,
      /timed out/,
    );
  });

  it("is 504 timeout when the caller's signal is already aborted, without any request", async () => {
    await expectFailure(fetchFile("http://files.example/a.png", { signal: AbortSignal.abort() }), "timeout", 504);
    expect(resolveHost).not.toHaveBeenCalled();
  });

  it("is 504 timeout when the caller's deadline passes mid-body", async () => {
    server.use(
      http.get("http://files.example/trickle.png", () => {
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            controller.enqueue(new Uint8Array(8));
            await sleep(50);
          },
        });
        return new HttpResponse(body);
      }),
    );
    await expectFailure(
      fetchFile("http://files.example/trickle.png", { signal: AbortSignal.timeout(200), timeoutMs: 10_000 }),
      "timeout",
      504,
    );
  });

  it("rethrows the caller's reason when it is an ApiError", async () => {
    server.use(
      http.get("http://files.example/slow", async () => {
        await sleep(2000);
        return HttpResponse.arrayBuffer(PNG.slice().buffer);
      }),
    );
    const controller = new AbortController();
    const reason = new ApiError("timeout", "Request deadline of 55 s exceeded");
    setTimeout(() => controller.abort(reason), 100);
    const error = await failure(fetchFile("http://files.example/slow", { signal: controller.signal }));
    expect(error).toBe(reason);
  });
});
