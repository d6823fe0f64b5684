import { http, HttpResponse } from "msw";
import { describe, expect, it, vi } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import {
  callOcr,
  createAccount,
  expectApiError,
  expectOcrOk,
  fixture,
  fixtureArrayBuffer,
  groundTruth,
  setEnv,
  sleep,
  withRemoteFiles,
  withStore,
} from "./support";

const server = withRemoteFiles();
withStore("memory");

/** A body that sends `first` bytes, then nothing for `stallMs`. */
function stallingBody(first: Uint8Array, stallMs: number): ReadableStream<Uint8Array> {
  return new ReadableStream({
    async start(controller) {
      controller.enqueue(first);
      await sleep(stallMs);
      try {
        controller.close();
      } catch {
        // cancelled by the reader meanwhile
      }
    },
  });
}

describe("imageUrl served by msw", () => {
  it("200 PNG after a redirect from another host: inputSource url", async () => {
    const account = await createAccount(10);
    server.use(
      http.get("https://files.example/share/abc", () => HttpResponse.redirect("https://cdn.example/blob/abc.png", 302)),
      http.get("https://cdn.example/blob/abc.png", () =>
        HttpResponse.arrayBuffer(fixtureArrayBuffer("paragraph.png"), { headers: { "content-type": "image/png" } }),
      ),
    );
    const body = await expectOcrOk(
      await callOcr({ imageUrl: "https://files.example/share/abc" }, { key: account.key }),
    );
    expect(body).toMatchObject({ inputSource: "url", creditsUsed: 1, pageCount: 1 });
    expect(characterErrorRate(body.extractedText, groundTruth("paragraph.png"))).toBeLessThan(0.05);
    expect(await account.balance()).toBe(9);
  });

  it("the type comes from the bytes, not the Content-Type: a PDF served as text/html, with options.pages", async () => {
    const account = await createAccount(10);
    server.use(
      http.get("http://files.example/report", () =>
        HttpResponse.arrayBuffer(fixtureArrayBuffer("born-digital.pdf"), { headers: { "content-type": "text/html" } }),
      ),
    );
    const body = await expectOcrOk(
      await callOcr(
        { imageUrl: "http://files.example/report", options: { pages: "3", format: "markdown" } },
        { key: account.key },
      ),
    );
    expect(body).toMatchObject({ inputSource: "url", creditsUsed: 1, pageCount: 3 });
    expect(body.extractedText).toContain("Nothing here was scanned.");
    expect(await account.balance()).toBe(9);
  });

  it("404 → 502 fetch_failed", async () => {
    const account = await createAccount(10);
    server.use(http.get("https://files.example/gone.png", () => new HttpResponse(null, { status: 404 })));
    await expectApiError(
      await callOcr({ imageUrl: "https://files.example/gone.png" }, { key: account.key }),
      "fetch_failed",
      /HTTP 404/,
    );
    expect(await account.balance()).toBe(10);
  });

  it("a redirect to a private address → 400, checked on every hop", async () => {
    const account = await createAccount(10);
    server.use(
      http.get("https://files.example/to-intranet", () =>
        HttpResponse.redirect("http://intranet.example/secret.png", 302),
      ),
      http.get("https://files.example/to-loopback", () => HttpResponse.redirect("http://127.0.0.1:8080/admin", 307)),
    );
    await expectApiError(
      await callOcr({ imageUrl: "https://files.example/to-intranet" }, { key: account.key }),
      "invalid_request",
      /private address \(after a redirect\)/,
    );
    await expectApiError(
      await callOcr({ imageUrl: "https://files.example/to-loopback" }, { key: account.key }),
      "invalid_request",
      /not a public address \(after a redirect\)/,
    );
    expect(await account.balance()).toBe(10);
  });

  it("a redirect to this server's own sample URL → 400: only the URL sent is read from the server's files", async () => {
    const account = await createAccount(10);
    server.use(
      http.get("https://files.example/to-own-sample", () =>
        HttpResponse.redirect("http://127.0.0.1:3000/samples/scan.png", 302),
      ),
    );
    await expectApiError(
      await callOcr(
        { imageUrl: "https://files.example/to-own-sample" },
        { key: account.key, headers: { host: "127.0.0.1:3000" } },
      ),
      "invalid_request",
      /not a public address \(after a redirect\)/,
    );
    expect(await account.balance()).toBe(10);
  });

  it("a private address or another scheme directly → 400", async () => {
    const account = await createAccount(10);
    for (const imageUrl of [
      "http://intranet.example/a.png",
      "http://10.1.2.3/a.png",
      "http://[::1]/a.png",
      "file:///etc/passwd",
      "ftp://files.example/a.png",
    ]) {
      await expectApiError(
        await callOcr({ imageUrl }, { key: account.key }),
        "invalid_request",
        /not allowed|not a public/,
      );
    }
    expect(await account.balance()).toBe(10);
  });

  it("an oversize body → 413, by Content-Length or while streaming", async () => {
    const restore = setEnv({ MAX_URL_BYTES: String(256 * 1024) });
    try {
      const account = await createAccount(10);
      const big = new Uint8Array(300 * 1024).fill(0x41);
      big.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      server.use(
        http.get("https://files.example/declared.png", () =>
          HttpResponse.arrayBuffer(big.buffer, { headers: { "content-length": String(big.byteLength) } }),
        ),
        http.get("https://files.example/streamed.png", () => {
          const chunk = big.subarray(0, 64 * 1024);
          let sent = 0;
          const stream = new ReadableStream<Uint8Array>({
            pull(controller) {
              if (sent++ < 64) controller.enqueue(chunk);
              else controller.close();
            },
          });
          return new HttpResponse(stream, { headers: { "content-type": "image/png" } });
        }),
      );
      for (const imageUrl of ["https://files.example/declared.png", "https://files.example/streamed.png"]) {
        await expectApiError(
          await callOcr({ imageUrl }, { key: account.key }),
          "payload_too_large",
          /limit for URL files/,
        );
      }
      expect(await account.balance()).toBe(10);
    } finally {
      restore();
    }
  });

  it("a slow body past the fetch timeout → 502 fetch_failed", async () => {
    const account = await createAccount(10);
    server.use(
      http.get(
        "https://files.example/slow.png",
        () => new HttpResponse(stallingBody(fixture("small-text.png").subarray(0, 100), 2_000)),
      ),
    );
    await expectApiError(
      await callOcr(
        { imageUrl: "https://files.example/slow.png" },
        // A route instance whose fetch gives up after 400 ms (the constant is 15 s).
        { key: account.key, settings: { fetch: { timeoutMs: 400 } } },
      ),
      "fetch_failed",
      /timed out/,
    );
    expect(await account.balance()).toBe(10);
  });

  it("wrong content: an HTML page → 415", async () => {
    const account = await createAccount(10);
    server.use(
      http.get("https://files.example/scan.png", () =>
        HttpResponse.html("<!doctype html><title>Sign in</title>", { headers: { "content-type": "image/png" } }),
      ),
    );
    await expectApiError(
      await callOcr({ imageUrl: "https://files.example/scan.png" }, { key: account.key }),
      "unsupported_media_type",
    );
    expect(await account.balance()).toBe(10);
  });

  it("too many redirects and an unknown host → 502", async () => {
    const account = await createAccount(10);
    server.use(
      http.get("https://files.example/loop/:n", ({ params }) =>
        HttpResponse.redirect(`https://files.example/loop/${Number(params.n) + 1}`, 302),
      ),
    );
    await expectApiError(
      await callOcr({ imageUrl: "https://files.example/loop/0" }, { key: account.key }),
      "fetch_failed",
      /too many redirects/,
    );
    await expectApiError(
      await callOcr({ imageUrl: "https://nowhere.example/a.png" }, { key: account.key }),
      "fetch_failed",
      /could not resolve/,
    );
    expect(await account.balance()).toBe(10);
  });

  it("never repeats the URL's query string in the answer or the log line", async () => {
    const restore = setEnv({ LOG_REQUESTS: "true" });
    const info = vi.spyOn(console, "info").mockImplementation(() => undefined);
    try {
      const account = await createAccount(10);
      server.use(http.get("https://files.example/private.png", () => new HttpResponse(null, { status: 403 })));
      const response = await callOcr(
        { imageUrl: "https://files.example/private.png?X-Amz-Signature=s3cr3t" },
        { key: account.key },
      );
      const body = await expectApiError(response, "fetch_failed", /HTTP 403/);
      expect(JSON.stringify(body)).not.toContain("s3cr3t");
      const lines = info.mock.calls.map((call) => call.join(" "));
      expect(lines).toHaveLength(1);
      expect(lines[0]).not.toContain("s3cr3t");
      expect(lines[0]).not.toContain(account.key);
      expect(lines[0]).toContain(`key_id=${account.keyId}`);
    } finally {
      info.mockRestore();
      restore();
    }
  });
});
