import { delay, http, HttpResponse } from "msw";
import { describe, expect, it, vi } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { claimIdempotencyKey, fingerprintRequest } from "@/lib/credits";
import { ocrDocumentSchema } from "@/lib/ocr/model";
import { revokeApiKey } from "@/lib/keys";
import { getStore } from "@/lib/store";
import { waitForWindowRoom } from "../support/redis";
import {
  base64Of,
  callOcr,
  createAccount,
  expectApiError,
  expectLedgerConsistent,
  expectOcrOk,
  fixtureArrayBuffer,
  groundTruth,
  setEnv,
  withRemoteFiles,
  withStore,
} from "./support";

const server = withRemoteFiles();

/** CER limits: the fixtures are clean renders; text-layer pages are exact. */
const IMAGE_CER = 0.05;
const PDF_CER = 0.01;

describe("POST /api/ocr/process (redis store)", () => {
  withStore("redis");

  describe("formats, on an image and on a PDF", () => {
    const png = base64Of("paragraph.png");
    const pdf = base64Of("born-digital.pdf");

    it("text: an image", async () => {
      const account = await createAccount(10);
      const body = await expectOcrOk(await callOcr({ image: png }, { key: account.key }));
      expect(body).toMatchObject({
        success: true,
        userId: account.userId,
        inputSource: "base64",
        creditsUsed: 1,
        pageCount: 1,
      });
      expect(characterErrorRate(body.extractedText, groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);
      expect(body.confidence).toBeGreaterThan(80);
      expect(body.confidence).toBeLessThanOrEqual(100);
      expect(Number.isInteger(body.processingTime)).toBe(true);
      expect(await account.balance()).toBe(9);
      await expectLedgerConsistent(account);
    });

    it("json: an image, whose extractedText parses as the document", async () => {
      const account = await createAccount(10);
      const body = await expectOcrOk(await callOcr({ image: png, options: { format: "json" } }, { key: account.key }));
      const document = ocrDocumentSchema.strict().parse(JSON.parse(body.extractedText));
      expect(document.pages).toHaveLength(1);
      const [page] = document.pages;
      expect(page).toMatchObject({ number: 1, source: "ocr" });
      expect(characterErrorRate(page!.text, groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);
      const words = page!.blocks.flatMap((block) => block.lines.flatMap((line) => line.words));
      expect(words.length).toBeGreaterThan(20);
      for (const word of words) {
        const [x0, y0, x1, y1] = word.bbox;
        expect(0 <= x0 && x0 <= x1 && x1 <= 1 && 0 <= y0 && y0 <= y1 && y1 <= 1).toBe(true);
      }
      expect(body.creditsUsed).toBe(1);
    });

    it("markdown: an image", async () => {
      const account = await createAccount(10);
      const body = await expectOcrOk(
        await callOcr({ image: png, options: { format: "markdown" } }, { key: account.key }),
      );
      expect(characterErrorRate(body.extractedText, groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);
      expect(body.creditsUsed).toBe(1);
    });

    it("text: a 3-page PDF, pages separated by form feeds, charged 3", async () => {
      const account = await createAccount(10);
      const body = await expectOcrOk(await callOcr({ image: pdf }, { key: account.key }));
      expect(body).toMatchObject({ creditsUsed: 3, pageCount: 3, confidence: 100, inputSource: "base64" });
      expect(body.extractedText.split("\f")).toHaveLength(3);
      expect(characterErrorRate(body.extractedText, groundTruth("born-digital.pdf"))).toBeLessThan(PDF_CER);
      expect(await account.balance()).toBe(7);
    });

    it("json: a PDF, text-layer pages", async () => {
      const account = await createAccount(10);
      const body = await expectOcrOk(await callOcr({ image: pdf, options: { format: "json" } }, { key: account.key }));
      const document = ocrDocumentSchema.strict().parse(JSON.parse(body.extractedText));
      expect(document.pages.map((page) => [page.number, page.source])).toEqual([
        [1, "text-layer"],
        [2, "text-layer"],
        [3, "text-layer"],
      ]);
      const text = document.pages.map((page) => page.text).join("\n");
      expect(characterErrorRate(text, groundTruth("born-digital.pdf"))).toBeLessThan(PDF_CER);
    });

    it("markdown: a PDF, with headings and page rules", async () => {
      const account = await createAccount(10);
      const body = await expectOcrOk(
        await callOcr({ image: pdf, options: { format: "markdown" } }, { key: account.key }),
      );
      expect(body.extractedText.split("\n\n---\n\n")).toHaveLength(3);
      expect(body.extractedText).toMatch(/^#+ Introduction$/m);
      const plain = body.extractedText.replace(/^#+ /gm, "").replace(/^---$/gm, "");
      expect(characterErrorRate(plain, groundTruth("born-digital.pdf"))).toBeLessThan(PDF_CER);
    });

    it('options.pages: "2" of the 3-page PDF reads and charges one page', async () => {
      const account = await createAccount(10);
      const body = await expectOcrOk(await callOcr({ image: pdf, options: { pages: "2" } }, { key: account.key }));
      expect(body).toMatchObject({ creditsUsed: 1, pageCount: 3 });
      expect(body.extractedText).toContain("The second page describes the methods.");
      expect(body.extractedText).not.toContain("Introduction");
      expect(await account.balance()).toBe(9);
      await expectLedgerConsistent(account);
    });
  });

  describe("inputs and keys", () => {
    it("accepts a data URL with whitespace, and the key as Authorization: Bearer", async () => {
      const account = await createAccount(10);
      const wrapped = base64Of("small-text.png").replace(/(.{76})/g, "$1\n");
      const response = await callOcr(
        { image: `data:image/png;base64,${wrapped}` },
        { key: null, headers: { authorization: `Bearer ${account.key}` } },
      );
      const body = await expectOcrOk(response);
      expect(body.inputSource).toBe("base64");
      expect(characterErrorRate(body.extractedText, groundTruth("small-text.png"))).toBeLessThan(IMAGE_CER);
      expect(response.headers.get("x-credits-remaining")).toBe("9");
    });

    it("fetches imageUrl: inputSource url", async () => {
      const account = await createAccount(10);
      server.use(
        http.get("https://files.example/scans/receipt.png", () =>
          HttpResponse.arrayBuffer(fixtureArrayBuffer("small-text.png")),
        ),
      );
      const body = await expectOcrOk(
        await callOcr({ imageUrl: "https://files.example/scans/receipt.png?token=secret" }, { key: account.key }),
      );
      expect(body.inputSource).toBe("url");
      expect(characterErrorRate(body.extractedText, groundTruth("small-text.png"))).toBeLessThan(IMAGE_CER);
      expect(await account.balance()).toBe(9);
    });

    it("x-api-key wins over Authorization; the api_key query parameter is not a carrier on REST", async () => {
      const account = await createAccount(10);
      const shadowed = await callOcr(
        { image: "AAAA" },
        {
          key: "ocr_wrongwrongwrongwrongwrongwrongwrongwrongwrong",
          headers: { authorization: `Bearer ${account.key}` },
        },
      );
      await expectApiError(shadowed, "unauthorized", /Invalid or revoked/);
      const query = await callOcr(
        { image: "AAAA" },
        { key: null, url: `http://localhost:3000/api/ocr/process?api_key=${account.key}` },
      );
      await expectApiError(query, "unauthorized", /Missing API key/);
      const basic = await callOcr({ image: "AAAA" }, { key: null, headers: { authorization: "Basic dXNlcjpwYXNz" } });
      await expectApiError(basic, "unauthorized", /Unsupported Authorization scheme "Basic"/);
      expect(await account.balance()).toBe(10);
    });

    it("a malformed Authorization header is named as such, not reported as a missing key", async () => {
      const account = await createAccount(10);
      const extra = await callOcr(
        { image: "AAAA" },
        { key: null, headers: { authorization: `Bearer ${account.key} extra` } },
      );
      await expectApiError(extra, "unauthorized", /Malformed Authorization header: expected exactly "Bearer <key>"/);
      expect(extra.headers.get("www-authenticate")).toMatch(/^Bearer/);
      const bare = await callOcr({ image: "AAAA" }, { key: null, headers: { authorization: "Bearer" } });
      await expectApiError(bare, "unauthorized", /Malformed Authorization header: the key is missing/);
      const token = await callOcr({ image: "AAAA" }, { key: null, headers: { authorization: `Token ${account.key}` } });
      await expectApiError(token, "unauthorized", /Unsupported Authorization scheme "Token"/);
      expect(await account.balance()).toBe(10);
    });

    it("a revoked key is refused on the next request", async () => {
      const account = await createAccount(10);
      await expectOcrOk(await callOcr({ image: base64Of("small-text.png") }, { key: account.key }));
      expect(await revokeApiKey(getStore(), { userId: account.userId, keyId: account.keyId })).toBe(true);
      const response = await callOcr({ image: base64Of("small-text.png") }, { key: account.key });
      await expectApiError(response, "unauthorized", /Invalid or revoked/);
      expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(await account.balance()).toBe(9);
    });
  });

  // One case per status code of the error catalogue that REST can answer; 503 `overloaded` and `unavailable` have files
  // of their own (overload.test.ts, outage.test.ts), because they need their own pool and their own Redis.
  describe("status codes", () => {
    it("400 invalid_request: neither image nor imageUrl", async () => {
      const account = await createAccount(10);
      const response = await callOcr({ options: { format: "text" } }, { key: account.key });
      await expectApiError(response, "invalid_request", /image .*imageUrl/);
      expect(response.headers.get("ratelimit-remaining")).toMatch(/^\d+$/);
      expect(await account.balance()).toBe(10);
    });

    it("401 unauthorized: no key, with WWW-Authenticate", async () => {
      const account = await createAccount(10);
      const response = await callOcr({ image: base64Of("small-text.png") }, { key: null });
      await expectApiError(response, "unauthorized", /Missing API key/);
      expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(await account.balance()).toBe(10);
    });

    it("402 insufficient_credits: a 3-page PDF on a 2-credit account, before any OCR", async () => {
      const account = await createAccount(2);
      const response = await callOcr({ image: base64Of("born-digital.pdf") }, { key: account.key });
      await expectApiError(response, "insufficient_credits", /needs 3 credits \(3 pages\) and the balance is 2/);
      expect(response.headers.get("x-credits-remaining")).toBe("2");
      expect(await account.balance()).toBe(2);
      await expectLedgerConsistent(account);
    });

    it("405 method_not_allowed: GET, with Allow", async () => {
      const response = await callOcr(undefined, { method: "GET" });
      await expectApiError(response, "method_not_allowed");
      expect(response.headers.get("allow")).toBe("POST, OPTIONS");
    });

    it("409 conflict: a concurrent duplicate with the same Idempotency-Key", async () => {
      const account = await createAccount(10);
      const body = { image: base64Of("small-text.png") };
      const headers = { "idempotency-key": `dup-${account.keyId}` };
      const [first, second] = await Promise.all([
        callOcr(body, { key: account.key, headers }),
        callOcr(body, { key: account.key, headers }),
      ]);
      const statuses = [first.status, second.status].sort();
      expect(statuses).toEqual([200, 409]);
      const [ok, conflict] = first.status === 200 ? [first, second] : [second, first];
      await expectApiError(conflict, "conflict", /still in progress/);
      const done = await expectOcrOk(ok);
      expect(await account.balance()).toBe(9);
      // Once the first has finished, the same key replays it.
      const replay = await callOcr(body, { key: account.key, headers });
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      expect(await replay.json()).toEqual(done);
      expect(await account.balance()).toBe(9);
    });

    it("413 payload_too_large: a body over the limit", async () => {
      const account = await createAccount(10);
      const restore = setEnv({ MAX_INLINE_BYTES: String(3 * 1024 * 1024) });
      try {
        const response = await callOcr({ image: "A".repeat(5 * 1024 * 1024) }, { key: account.key });
        await expectApiError(response, "payload_too_large", /imageUrl/);
      } finally {
        restore();
      }
      expect(await account.balance()).toBe(10);
    });

    it("413 payload_too_large: an image header over the pixel limit", async () => {
      const account = await createAccount(10);
      await expectApiError(
        await callOcr({ image: base64Of("hostile/huge-header.png") }, { key: account.key }),
        "payload_too_large",
        /megapixels/,
      );
      expect(await account.balance()).toBe(10);
    });

    it("415 unsupported_media_type: a GIF", async () => {
      const account = await createAccount(10);
      await expectApiError(
        await callOcr({ image: base64Of("hostile/gif.gif") }, { key: account.key }),
        "unsupported_media_type",
      );
      expect(await account.balance()).toBe(10);
    });

    it("422 unreadable_document: a truncated PDF", async () => {
      const account = await createAccount(10);
      await expectApiError(
        await callOcr({ image: base64Of("hostile/truncated.pdf") }, { key: account.key }),
        "unreadable_document",
      );
      expect(await account.balance()).toBe(10);
    });

    it("422 unreadable_document: a truncated PNG found only while decoding is refunded", async () => {
      const account = await createAccount(10);
      await expectApiError(
        await callOcr({ image: base64Of("hostile/truncated.png") }, { key: account.key }),
        "unreadable_document",
      );
      expect(await account.balance()).toBe(10);
      await expectLedgerConsistent(account);
    });

    it("422 idempotency_mismatch: the same Idempotency-Key with another body", async () => {
      const account = await createAccount(10);
      const headers = { "idempotency-key": "mismatch-1" };
      await expectOcrOk(await callOcr({ image: base64Of("small-text.png") }, { key: account.key, headers }));
      const response = await callOcr(
        { image: base64Of("small-text.png"), options: { format: "json" } },
        { key: account.key, headers },
      );
      await expectApiError(response, "idempotency_mismatch", /different request body/);
      expect(await account.balance()).toBe(9);
    });

    it("429 rate_limited: past the per-key limit, with Retry-After and RateLimit-*", async () => {
      const restore = setEnv({ RATE_LIMIT_PER_MINUTE: "2" });
      try {
        await waitForWindowRoom(60_000, 5_000);
        const account = await createAccount(10);
        for (let i = 0; i < 2; i++) {
          const allowed = await callOcr({}, { key: account.key });
          await expectApiError(allowed, "invalid_request");
          expect(allowed.headers.get("ratelimit-remaining")).toBe(String(1 - i));
        }
        const response = await callOcr({ image: base64Of("small-text.png") }, { key: account.key });
        await expectApiError(response, "rate_limited", /2 requests per minute/);
        expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
        expect(response.headers.get("ratelimit-limit")).toBe("2");
        expect(response.headers.get("ratelimit-remaining")).toBe("0");
        expect(await account.balance()).toBe(10);
      } finally {
        restore();
      }
    });

    it("502 fetch_failed: imageUrl answers 404", async () => {
      const account = await createAccount(10);
      server.use(http.get("https://files.example/missing.png", () => new HttpResponse("gone", { status: 404 })));
      await expectApiError(
        await callOcr({ imageUrl: "https://files.example/missing.png" }, { key: account.key }),
        "fetch_failed",
        /HTTP 404/,
      );
      expect(await account.balance()).toBe(10);
    });

    it("504 timeout: the request deadline passes (here while fetching imageUrl); nothing is charged", async () => {
      const restore = setEnv({ REQUEST_DEADLINE_MS: "1000" });
      try {
        const account = await createAccount(10);
        server.use(
          http.get("https://files.example/slow.png", async () => {
            await delay(3_000);
            return HttpResponse.arrayBuffer(fixtureArrayBuffer("small-text.png"));
          }),
        );
        await expectApiError(
          await callOcr({ imageUrl: "https://files.example/slow.png" }, { key: account.key }),
          "timeout",
        );
        expect(await account.balance()).toBe(10);
      } finally {
        restore();
      }
    });

    it("500 internal_error: an unexpected failure; details only in the log, nothing charged", async () => {
      const account = await createAccount(10);
      const store = getStore().jobs;
      const reserve = vi.spyOn(store, "createJob").mockRejectedValueOnce(new TypeError("boom: secret detail"));
      const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
      try {
        const response = await callOcr({ image: base64Of("small-text.png") }, { key: account.key });
        const body = await expectApiError(response, "internal_error", /^Internal error$/);
        expect(JSON.stringify(body)).not.toContain("boom");
        expect(logged.mock.calls.flat().join(" ")).toContain("boom: secret detail");
      } finally {
        reserve.mockRestore();
        logged.mockRestore();
      }
      expect(await account.balance()).toBe(10);
    });
  });

  describe("idempotency", () => {
    it("the same request 3 times with one key: charged once, identical bodies", async () => {
      const account = await createAccount(10);
      const body = { image: base64Of("small-text.png"), options: { format: "json" } };
      const headers = { "idempotency-key": "retry-3-times" };
      const responses = [];
      for (let i = 0; i < 3; i++) responses.push(await callOcr(body, { key: account.key, headers }));
      const texts = await Promise.all(responses.map((response) => response.text()));
      expect(responses.map((response) => response.status)).toEqual([200, 200, 200]);
      expect(new Set(texts).size).toBe(1);
      expect(responses.map((response) => response.headers.get("idempotent-replayed"))).toEqual([null, "true", "true"]);
      // Each response still has its own request id in the header; the body is the original's.
      const ids = responses.map((response) => response.headers.get("x-request-id"));
      expect(new Set(ids).size).toBe(3);
      expect(JSON.parse(texts[0]!)).toMatchObject({ requestId: ids[0], creditsUsed: 1 });
      expect(await account.balance()).toBe(9);
      await expectLedgerConsistent(account);
    });

    it("the key is per account: another account's same key runs its own request", async () => {
      const [a, b] = [await createAccount(10), await createAccount(10)];
      const body = { image: base64Of("small-text.png") };
      const headers = { "idempotency-key": "shared-key" };
      await expectOcrOk(await callOcr(body, { key: a.key, headers }));
      const other = await callOcr(body, { key: b.key, headers });
      expect(other.headers.get("idempotent-replayed")).toBeNull();
      expect((await expectOcrOk(other)).userId).toBe(b.userId);
      expect([await a.balance(), await b.balance()]).toEqual([9, 9]);
    });

    it("a final client error is stored and replayed; a 402 is not, so the retry runs once credits arrive", async () => {
      const account = await createAccount(0);
      const unreadable = { "idempotency-key": "bad-file" };
      const first = await callOcr({ image: base64Of("hostile/gif.gif") }, { key: account.key, headers: unreadable });
      const firstBody = await expectApiError(first, "unsupported_media_type");
      const again = await callOcr({ image: base64Of("hostile/gif.gif") }, { key: account.key, headers: unreadable });
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(await again.json()).toEqual(firstBody);

      const headers = { "idempotency-key": "needs-credits" };
      const body = { image: base64Of("small-text.png") };
      await expectApiError(await callOcr(body, { key: account.key, headers }), "insufficient_credits");
      const { grantCredits } = await import("@/lib/credits");
      await grantCredits(getStore(), { userId: account.userId, credits: 1 });
      const paid = await callOcr(body, { key: account.key, headers });
      expect(paid.headers.get("idempotent-replayed")).toBeNull();
      expect((await expectOcrOk(paid)).creditsUsed).toBe(1);
      expect(await account.balance()).toBe(0);
    });

    it("a 5xx releases the key: the retry runs again", async () => {
      const account = await createAccount(10);
      const headers = { "idempotency-key": "after-outage" };
      const body = { image: base64Of("small-text.png") };
      const reserve = vi.spyOn(getStore().jobs, "createJob").mockRejectedValueOnce(new TypeError("transient"));
      const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
      try {
        await expectApiError(await callOcr(body, { key: account.key, headers }), "internal_error");
      } finally {
        reserve.mockRestore();
        logged.mockRestore();
      }
      const retry = await callOcr(body, { key: account.key, headers });
      expect(retry.headers.get("idempotent-replayed")).toBeNull();
      await expectOcrOk(retry);
      expect(await account.balance()).toBe(9);
    });

    it("a malformed Idempotency-Key is a 400", async () => {
      const account = await createAccount(10);
      await expectApiError(
        await callOcr(
          { image: base64Of("small-text.png") },
          { key: account.key, headers: { "idempotency-key": "x".repeat(300) } },
        ),
        "invalid_request",
        /Idempotency-Key/,
      );
      expect(await account.balance()).toBe(10);
    });

    it("fingerprints method, path and the raw body", async () => {
      // A claim made with the wrapper's fingerprint for the same bytes is seen as the same request.
      const account = await createAccount(10);
      const raw = JSON.stringify({ image: base64Of("small-text.png") });
      const claim = await claimIdempotencyKey(getStore(), {
        userId: account.userId,
        key: "pre-claimed",
        fingerprint: fingerprintRequest(["POST", "/api/ocr/process", new TextEncoder().encode(raw)]),
      });
      expect(claim.status).toBe("claimed");
      const response = await callOcr(undefined, {
        key: account.key,
        raw,
        headers: { "idempotency-key": "pre-claimed" },
      });
      await expectApiError(response, "conflict");
    });
  });
});
