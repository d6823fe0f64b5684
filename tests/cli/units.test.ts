import { describe, expect, it } from "vitest";
import { parseBaseUrl, parseDuration, resolveConfig } from "@/cli/src/config";
import { exitCodeForStatus } from "@/cli/src/errors";
import { preferWaitSeconds } from "@/cli/src/api";
import { backoffMs, NetworkError, retryAfterMs, sendWithRetry } from "@/cli/src/http";
import { ProgressBar, ProgressLines } from "@/cli/src/progress";

/* The CLI's pure parts, in process: configuration, retry timing, exit codes and the progress bar. */

describe("configuration", () => {
  it("takes the key from --api-key, then FETCH_MCP_SERVER_API_KEY, then OCR_API_KEY", () => {
    const env = { FETCH_MCP_SERVER_API_KEY: "ocr_fetch", OCR_API_KEY: "ocr_other" };
    expect(resolveConfig({}, env, "1").apiKey).toBe("ocr_fetch");
    expect(resolveConfig({}, { OCR_API_KEY: "ocr_other", FETCH_MCP_SERVER_API_KEY: " " }, "1").apiKey).toBe(
      "ocr_other",
    );
    expect(resolveConfig({ "api-key": "ocr_flag" }, env, "1").apiKey).toBe("ocr_flag");
    expect(resolveConfig({}, {}, "1").apiKey).toBeUndefined();
  });

  it("defaults: localhost:3000, 30 000 ms per attempt, 3 retries, 20 MiB inline", () => {
    expect(resolveConfig({}, {}, "1")).toMatchObject({
      baseUrl: "http://localhost:3000",
      timeoutMs: 30_000,
      retries: 3,
      maxInlineBytes: 20 * 1024 * 1024,
    });
    expect(
      resolveConfig({ "base-url": "https://ocr.example.com/prefix/" }, { OCR_BASE_URL: "http://x" }, "1").baseUrl,
    ).toBe("https://ocr.example.com/prefix");
  });

  it("refuses base URLs that are not plain http(s) origins or prefixes", () => {
    for (const bad of [
      "ftp://example.com",
      "not a url",
      "https://user:pass@example.com",
      "https://example.com/?api_key=x",
    ]) {
      expect(() => parseBaseUrl(bad)).toThrow(/OCR_BASE_URL/);
    }
  });

  it("durations in ms, s or m", () => {
    expect(parseDuration("30000", "--timeout")).toBe(30_000);
    expect(parseDuration("45s", "--timeout")).toBe(45_000);
    expect(parseDuration("1.5m", "--timeout")).toBe(90_000);
    expect(() => parseDuration("0", "--timeout")).toThrow(/between 100 ms and 1 h/);
  });
});

describe("retry timing", () => {
  it("Retry-After: seconds or an HTTP date", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterMs("3", now)).toBe(3000);
    expect(retryAfterMs("Thu, 01 Jan 2026 00:00:10 GMT", now)).toBe(10_000);
    expect(retryAfterMs("Wed, 31 Dec 2025 23:59:00 GMT", now)).toBe(0);
    expect(retryAfterMs(null, now)).toBeNull();
    expect(retryAfterMs("soon", now)).toBeNull();
  });

  it("backoff doubles from 0.5 s up to 8 s, with ±20 % jitter", () => {
    for (const [retry, base] of [
      [1, 500],
      [2, 1000],
      [3, 2000],
      [6, 8000],
      [9, 8000],
    ] as const) {
      const delay = backoffMs(retry);
      expect(delay).toBeGreaterThanOrEqual(base * 0.8);
      expect(delay).toBeLessThanOrEqual(base * 1.2);
    }
  });

  it("a 409 (an earlier attempt still running) is polled without using up the retries", async () => {
    const statuses = [409, 409, 200];
    const keys: (string | null)[] = [];
    const fetch = (async (_url: string | URL | Request, init?: RequestInit) => {
      keys.push(new Headers(init?.headers).get("idempotency-key"));
      return new Response("{}", { status: statuses.shift()!, headers: { "retry-after": "0" } });
    }) as typeof globalThis.fetch;
    const response = await sendWithRetry(
      "http://ocr.test/api/ocr/process",
      { method: "POST" },
      {
        timeoutMs: 1000,
        retries: 0,
        idempotencyKey: "key-1",
        fetch,
      },
    );
    expect(response.status).toBe(200);
    expect(keys).toEqual(["key-1", "key-1", "key-1"]);
  });

  it("a Retry-After over two minutes is not waited for: the answer is returned", async () => {
    let calls = 0;
    const fetch = (async () => {
      calls += 1;
      return new Response("{}", { status: 429, headers: { "retry-after": "3600" } });
    }) as typeof globalThis.fetch;
    const response = await sendWithRetry("http://ocr.test/x", {}, { timeoutMs: 1000, retries: 3, fetch });
    expect(response.status).toBe(429);
    expect(calls).toBe(1);
  });

  it("times out an attempt that gets no answer, then retries", async () => {
    let calls = 0;
    const fetch = ((_url: string | URL | Request, init?: RequestInit) => {
      calls += 1;
      if (calls === 2) return Promise.resolve(new Response("ok"));
      return new Promise<Response>((_resolve, reject) =>
        init?.signal?.addEventListener("abort", () => reject(init.signal?.reason)),
      );
    }) as typeof globalThis.fetch;
    const retries: string[] = [];
    const response = await sendWithRetry(
      "http://ocr.test/x",
      {},
      { timeoutMs: 150, retries: 1, fetch, onRetry: (info) => retries.push(info.reason) },
    );
    expect(await response.text()).toBe("ok");
    expect(retries).toEqual(["timed out after 150 ms"]);
  });

  it("retryTimeouts false: an attempt without an answer is not sent again, and says it timed out", async () => {
    let calls = 0;
    const fetch = ((_url: string | URL | Request, init?: RequestInit) => {
      calls += 1;
      return new Promise<Response>((_resolve, reject) =>
        init?.signal?.addEventListener("abort", () => reject(init.signal?.reason)),
      );
    }) as typeof globalThis.fetch;
    const error = await sendWithRetry(
      "http://ocr.test/x",
      {},
      { timeoutMs: 150, retries: 3, retryTimeouts: false, fetch },
    )
      .then(() => undefined)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).timedOut).toBe(true);
    expect(calls).toBe(1);
  });

  it("the wait a read asks for: --timeout less 5 s, at least 5 s", () => {
    expect(preferWaitSeconds(30_000)).toBe(25);
    expect(preferWaitSeconds(120_000)).toBe(115);
    expect(preferWaitSeconds(2_000)).toBe(5);
  });
});

describe("exit codes", () => {
  it("maps the service's statuses", () => {
    expect([401, 403, 402, 400, 404, 410, 413, 415, 422, 409, 429, 500, 502, 503, 504].map(exitCodeForStatus)).toEqual([
      3, 3, 4, 5, 5, 5, 5, 5, 5, 1, 1, 1, 1, 1, 1,
    ]);
  });
});

describe("progress bar", () => {
  const fakeStream = (isTTY: boolean) => {
    const writes: string[] = [];
    return { writes, stream: { isTTY, columns: 80, write: (text: string) => (writes.push(text), true) } };
  };

  it("draws in place on a terminal and keeps log lines above it", () => {
    const { writes, stream } = fakeStream(true);
    const bar = new ProgressBar(stream, 4);
    bar.start("a.png");
    bar.tick();
    expect(bar.render()).toMatch(/^\[#{8}-{22}\] 1\/4 {2}a\.png$/);
    bar.log("ocr: b.png: no such file");
    bar.finish();
    expect(writes.join("")).toContain("\r\x1b[2K[");
    expect(writes).toContain("ocr: b.png: no such file\n");
    expect(writes.at(-1)).toBe("\r\x1b[2K");
  });

  it("draws nothing off a terminal, or for a single file", () => {
    for (const [isTTY, total] of [
      [false, 4],
      [true, 1],
    ] as const) {
      const { writes, stream } = fakeStream(isTTY);
      const bar = new ProgressBar(stream, total);
      bar.start("a.png");
      bar.tick();
      bar.log("a line");
      bar.finish();
      expect(writes).toEqual(["a line\n"]);
    }
  });

  it("a single file's job: the bar counts its pages; with several files the pages follow the file's name", () => {
    const single = fakeStream(true);
    const bar = new ProgressBar(single.stream, 1);
    bar.start("big.pdf");
    bar.pages("big.pdf", 30, 120);
    expect(bar.render()).toMatch(/^\[#{8}-{22}\]  30\/120 pages {2}big\.pdf$/);
    bar.log("ocr: a note");
    bar.tick();
    expect(single.writes.at(-1)).toBe("\r\x1b[2K");
    expect(single.writes).toContain("ocr: a note\n");

    const several = fakeStream(true);
    const files = new ProgressBar(several.stream, 3);
    files.start("a.png");
    files.tick();
    files.pages("big.pdf", 5, 10);
    expect(files.render()).toMatch(/^\[#{10}-{20}\] 1\/3 {2}big\.pdf 5\/10 pages$/);

    const piped = fakeStream(false);
    new ProgressBar(piped.stream, 1).pages("big.pdf", 1, 2);
    expect(piped.writes).toEqual([]);
  });
});

describe("progress lines off a terminal", () => {
  it("at most one per interval, and only when the job moved", () => {
    let now = 0;
    const lines = new ProgressLines(10_000, () => now);
    const job = (status: string, pagesDone: number, pagesFailed = 0) => ({
      status,
      pagesDone,
      pagesFailed,
      pagesTotal: 120,
    });
    lines.mark(job("queued", 0));
    now = 5_000;
    expect(lines.next(job("running", 10))).toBeNull();
    now = 10_000;
    expect(lines.next(job("running", 12))).toBe("running, 12/120 pages read");
    now = 25_000;
    expect(lines.next(job("running", 12))).toBeNull();
    expect(lines.next(job("running", 40, 2))).toBe("running, 40/120 pages read, 2 failed");
  });
});
