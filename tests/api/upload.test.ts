import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as jobsRoute from "@/app/api/ocr/jobs/route";
import * as jobRoute from "@/app/api/ocr/jobs/[id]/route";
import * as resultRoute from "@/app/api/ocr/jobs/[id]/result/route";
import * as processRoute from "@/app/api/ocr/process/route";
import { characterErrorRate } from "@/bench/metrics";
import { jobResultSchema, jobViewSchema, type JobViewBody } from "@/lib/api/schemas";
import { listLedger } from "@/lib/credits";
import { getEnv } from "@/lib/env";
import { maxBodyBytes } from "@/lib/http/body";
import { JobRunner, resetWorkQueue } from "@/lib/jobs";
import { getStore } from "@/lib/store";
import { createTestPool } from "../support/ocr";
import { phonePhoto } from "../support/phone-photo";
import {
  createAccount,
  expectApiError,
  expectOcrOk,
  fixture,
  groundTruth,
  setEnv,
  withStore,
  type TestAccount,
} from "./support";
import { startTestRunner } from "../support/jobs";

/*
 * Issue 29 point 8: the files people have. A phone-photo sized JPEG (3.7 MB, over the old 3 MB inline limit) sent as
 * multipart/form-data (`file`) and as a raw body (`Content-Type: image/jpeg`, options in the query) to both
 * POST /api/ocr/process and POST /api/ocr/jobs, read with its text checked; over the limit `413` before the body is
 * buffered, nothing charged; bytes of another type `415` whatever the declared type; a wrong form `400`.
 */

const BASE = "http://localhost:3000";
const PROCESS = `${BASE}/api/ocr/process`;
const JOBS = `${BASE}/api/ocr/jobs`;
const MB = 1e6;
/** A fixture as a Uint8Array over an ArrayBuffer of its own (a Blob part, a body). */
const bytesOf = (name: string): Uint8Array<ArrayBuffer> => new Uint8Array(fixture(name));
const CER = 0.05;

type Route = { name: string; url: string; post: (req: Request) => Promise<Response> };
const ROUTES: Route[] = [
  { name: "POST /api/ocr/process", url: PROCESS, post: (req) => processRoute.POST(req) },
  { name: "POST /api/ocr/jobs", url: JOBS, post: (req) => jobsRoute.POST(req) },
];

function multipart(
  url: string,
  key: string,
  fields: Record<string, string | Blob>,
  headers: Record<string, string> = {},
): Request {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) {
    if (typeof value === "string") form.append(name, value);
    else form.append(name, value, name === "file" ? "photo.jpg" : undefined);
  }
  // The Request sets `multipart/form-data; boundary=…` (and a Content-Length) itself.
  return new Request(url, { method: "POST", headers: { "x-api-key": key, ...headers }, body: form });
}

function raw(url: string, key: string, body: BodyInit, type: string, headers: Record<string, string> = {}): Request {
  const init: RequestInit & { duplex?: "half" } = {
    method: "POST",
    headers: { "x-api-key": key, "content-type": type, ...headers },
    body,
  };
  if (body instanceof ReadableStream) init.duplex = "half";
  return new Request(url, init);
}

/** A body that streams `total` bytes of a JPEG's start and noise, counting what the server pulled. */
function countedStream(total: number, chunk = 64 * 1024): { stream: ReadableStream<Uint8Array>; pulled: () => number } {
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (sent >= total) return controller.close();
        const bytes = new Uint8Array(Math.min(chunk, total - sent)).fill(0x41);
        if (sent === 0) bytes.set([0xff, 0xd8, 0xff, 0xe0]);
        sent += bytes.byteLength;
        controller.enqueue(bytes);
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, pulled: () => sent };
}

async function expectNothingCharged(account: TestAccount, credits: number): Promise<void> {
  expect(await account.balance()).toBe(credits);
  const { entries } = await listLedger(getStore(), account.userId, { limit: 10 });
  expect(entries.filter((entry) => entry.reason !== "grant")).toEqual([]);
}

describe("uploads: multipart/form-data and raw bodies (issue 29 point 8)", () => {
  withStore("redis", { RATE_LIMIT_PER_MINUTE: "100000" });
  const pool = createTestPool();
  let runner: JobRunner;
  let photo: Uint8Array<ArrayBuffer>;
  const truth = groundTruth("paragraph.png");

  beforeAll(async () => {
    photo = await phonePhoto();
    runner = startTestRunner("test-upload", pool);
  }, 180_000);
  afterAll(async () => {
    await runner.stop();
    await resetWorkQueue();
    await pool.terminate();
  });

  async function jobText(account: TestAccount, response: Response): Promise<{ view: JobViewBody; text: string }> {
    const body = await response.text();
    expect(response.status, body.slice(0, 300)).toBe(202);
    let view = jobViewSchema.parse(JSON.parse(body));
    while (view.status === "queued" || view.status === "running") {
      await new Promise((resolve) => setTimeout(resolve, 250));
      view = jobViewSchema.parse(
        await (
          await jobRoute.GET(new Request(`${BASE}${view.links.self}`, { headers: { "x-api-key": account.key } }))
        ).json(),
      );
    }
    const result = await resultRoute.GET(
      new Request(`${BASE}${view.links.result}`, { headers: { "x-api-key": account.key } }),
    );
    return { view, text: jobResultSchema.parse(await result.json()).extractedText };
  }

  it("the phone photo is 3.5–3.9 MB (over the old 3 MB inline limit) and the default limit takes it", () => {
    expect(photo.byteLength).toBeGreaterThan(3.5 * MB);
    expect(photo.byteLength).toBeLessThan(3.9 * MB);
  });

  it("POST /api/ocr/process, multipart `file` with a `format` field: 200, read, one credit, inputSource upload", async () => {
    const account = await createAccount(5);
    const response = await processRoute.POST(
      multipart(PROCESS, account.key, { file: new Blob([photo], { type: "image/jpeg" }), format: "text" }),
    );
    const body = await expectOcrOk(response);
    expect(body).toMatchObject({ inputSource: "upload", creditsUsed: 1, pageCount: 1 });
    expect(characterErrorRate(body.extractedText, truth)).toBeLessThan(CER);
    expect(await account.balance()).toBe(4);
  });

  it("POST /api/ocr/process, the JPEG as the raw body, options in the query: 200, read, one credit", async () => {
    const account = await createAccount(5);
    const response = await processRoute.POST(
      raw(`${PROCESS}?format=markdown&language=eng`, account.key, photo as BodyInit, "image/jpeg"),
    );
    const body = await expectOcrOk(response);
    expect(body).toMatchObject({ inputSource: "upload", creditsUsed: 1 });
    expect(characterErrorRate(body.extractedText, truth)).toBeLessThan(CER);
    // application/octet-stream: the bytes alone decide.
    const generic = await expectOcrOk(
      await processRoute.POST(
        raw(PROCESS, account.key, bytesOf("paragraph.png") as BodyInit, "application/octet-stream"),
      ),
    );
    expect(characterErrorRate(generic.extractedText, truth)).toBeLessThan(CER);
    expect(await account.balance()).toBe(3);
  });

  it("POST /api/ocr/jobs, multipart and raw body: 202, the job reads the photo, one credit each", async () => {
    const account = await createAccount(5);
    const viaForm = await jobText(
      account,
      await jobsRoute.POST(multipart(JOBS, account.key, { file: new Blob([photo]), pages: "1" })),
    );
    expect(viaForm.view).toMatchObject({ status: "succeeded", inputSource: "upload", creditsUsed: 1 });
    expect(characterErrorRate(viaForm.text, truth)).toBeLessThan(CER);
    const viaBody = await jobText(
      account,
      await jobsRoute.POST(raw(`${JOBS}?format=text`, account.key, photo as BodyInit, "image/jpeg")),
    );
    expect(viaBody.view).toMatchObject({ status: "succeeded", inputSource: "upload", creditsUsed: 1 });
    expect(characterErrorRate(viaBody.text, truth)).toBeLessThan(CER);
    // Prefer: respond-async on /api/ocr/process takes the same forms.
    const preferred = await processRoute.POST(
      raw(PROCESS, account.key, bytesOf("paragraph.png") as BodyInit, "image/png", { prefer: "respond-async" }),
    );
    const viaPrefer = await jobText(account, preferred);
    expect(characterErrorRate(viaPrefer.text, truth)).toBeLessThan(CER);
    expect(await account.balance()).toBe(2);
  });

  describe.each(ROUTES)("$name", ({ url, post }) => {
    it("413 over MAX_INLINE_BYTES, multipart and raw, declared or streamed: refused before the body is read, nothing charged", async () => {
      const account = await createAccount(5);
      const restore = setEnv({ MAX_INLINE_BYTES: String(2 * 1024 * 1024) });
      try {
        await expectApiError(
          await post(multipart(url, account.key, { file: new Blob([photo]) })),
          "payload_too_large",
          /2 MB, the limit for a file sent in the request.*imageUrl.*POST \/api\/ocr\/jobs/,
        );
        await expectApiError(
          await post(raw(url, account.key, photo as BodyInit, "image/jpeg")),
          "payload_too_large",
          /imageUrl/,
        );
        // No Content-Length: counted while it streams, and the rest never pulled.
        const { stream, pulled } = countedStream(50 * 1024 * 1024);
        const streamed = await post(raw(url, account.key, stream, "image/jpeg"));
        // The rest stays unread: the answer closes the connection, so a kept-alive client's next request is not sent
        // behind it (scripts/smoke.ts checks it on the built server's sockets).
        expect(streamed.headers.get("connection")).toBe("close");
        await expectApiError(streamed, "payload_too_large", /imageUrl/);
        expect(pulled()).toBeLessThan(2 * 1024 * 1024 + 4 * 64 * 1024);
      } finally {
        restore();
      }
      await expectNothingCharged(account, 5);
    });

    it("415 for bytes that are not a document, whatever was declared; and for a Content-Type we do not take", async () => {
      const account = await createAccount(5);
      const gif = bytesOf("hostile/gif.gif");
      await expectApiError(
        await post(raw(url, account.key, gif as BodyInit, "image/png")),
        "unsupported_media_type",
        /not a PDF, JPEG, PNG, WebP or TIFF.*declared image\/png/,
      );
      await expectApiError(
        await post(multipart(url, account.key, { file: new Blob(["just some text"], { type: "text/plain" }) })),
        "unsupported_media_type",
        /"file" field/,
      );
      await expectApiError(
        await post(raw(url, account.key, "hello", "text/plain")),
        "unsupported_media_type",
        /multipart\/form-data/,
      );
      await expectNothingCharged(account, 5);
    });

    it("400 for a wrong form: no file, file as text, unknown or repeated fields, an empty file, a bad option", async () => {
      const account = await createAccount(5);
      const png = new Blob([bytesOf("paragraph.png")], { type: "image/png" });
      await expectApiError(
        await post(multipart(url, account.key, { format: "text" })),
        "invalid_request",
        /no "file" field/,
      );
      await expectApiError(
        await post(multipart(url, account.key, { file: "scan.pdf" })),
        "invalid_request",
        /holds text, not a file.*-F file=@/,
      );
      await expectApiError(
        await post(multipart(url, account.key, { file: png, image: "AAAA" })),
        "invalid_request",
        /Unknown form field "image"/,
      );
      const twice = new FormData();
      twice.append("file", png, "a.png");
      twice.append("file", png, "b.png");
      await expectApiError(
        await post(new Request(url, { method: "POST", headers: { "x-api-key": account.key }, body: twice })),
        "invalid_request",
        /"file" is sent more than once/,
      );
      await expectApiError(await post(multipart(url, account.key, { file: new Blob([]) })), "invalid_request", /empty/);
      await expectApiError(
        await post(multipart(url, account.key, { file: png, format: "docx" })),
        "invalid_request",
        /format/,
      );
      await expectApiError(
        await post(raw(`${url}?fromat=text`, account.key, bytesOf("paragraph.png") as BodyInit, "image/png")),
        "invalid_request",
        /Unknown query parameter "fromat"/,
      );
      await expectApiError(
        await post(raw(url, account.key, new Uint8Array(0) as BodyInit, "image/png")),
        "invalid_request",
        /empty/,
      );
      await expectApiError(
        await post(
          raw(
            url,
            account.key,
            '--x\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc',
            "multipart/form-data; boundary=x",
          ),
        ),
        "invalid_request",
        /could not be parsed/,
      );
      await expectNothingCharged(account, 5);
    });
  });

  it("no key, a wrong key: 401 without reading the body, and the connection closes (not drained to its end)", async () => {
    for (const route of ROUTES) {
      for (const key of ["", "ocr_" + "x".repeat(40)]) {
        const { stream, pulled } = countedStream(60 * 1024 * 1024);
        const response = await route.post(raw(route.url, key, stream, "application/pdf"));
        await expectApiError(response, "unauthorized");
        expect(response.headers.get("connection")).toBe("close");
        expect(pulled()).toBeLessThanOrEqual(64 * 1024);
      }
    }
  });

  it("259 000 parts (issue 39 item 14): 400 before the body is parsed, with or without an Idempotency-Key; nothing charged", async () => {
    const account = await createAccount(5);
    const part = '--b\r\nContent-Disposition: form-data; name="format"\r\n\r\ntext\r\n';
    const body = `${part.repeat(259_000)}--b--\r\n`;
    expect(body.length).toBeLessThan(maxBodyBytes(getEnv().MAX_INLINE_BYTES, "multipart"));
    const tooMany = /more than 16 parts; it holds the file in "file" and at most the option fields/;
    for (const route of ROUTES) {
      for (const headers of [{}, { "idempotency-key": `parts-${route.url.length}` }] as Array<Record<string, string>>) {
        await expectApiError(
          await route.post(raw(route.url, account.key, body, "multipart/form-data; boundary=b", headers)),
          "invalid_request",
          tooMany,
        );
      }
    }
    // A quoted boundary is counted the same; a body within the bound still gets the parser's precise refusal.
    await expectApiError(
      await processRoute.POST(raw(PROCESS, account.key, body, 'multipart/form-data; boundary="b"')),
      "invalid_request",
      tooMany,
    );
    await expectApiError(
      await processRoute.POST(
        raw(PROCESS, account.key, `${part.repeat(2)}--b--\r\n`, "multipart/form-data; boundary=b"),
      ),
      "invalid_request",
      /"format" is sent more than once/,
    );
    await expectNothingCharged(account, 5);
  });

  it("on Vercel the 413 says the platform stops request bodies at 4.5 MB and what to send instead", async () => {
    const account = await createAccount(5);
    const big = new Uint8Array(4 * 1024 * 1024 + 1);
    big.set(photo.subarray(0, 1024));
    const restore = setEnv({ VERCEL: "1", MAX_INLINE_BYTES: String(4 * 1024 * 1024) });
    try {
      await expectApiError(
        await processRoute.POST(raw(PROCESS, account.key, big as BodyInit, "image/jpeg")),
        "payload_too_large",
        /4 MB, the limit for a file sent in the request.*runs on Vercel, whose request bodies stop at 4\.5 MB.*\{"imageUrl": "https:\/\/…"\}.*POST \/api\/ocr\/jobs \(up to 200 MB/,
      );
    } finally {
      restore();
    }
    await expectNothingCharged(account, 5);
  });

  it("Idempotency-Key: a multipart retry with another boundary replays, charged once; another file is a mismatch", async () => {
    const account = await createAccount(5);
    const headers = { "idempotency-key": `upload-${Date.now()}` };
    const png = bytesOf("paragraph.png");
    const first = await expectOcrOk(
      await processRoute.POST(multipart(PROCESS, account.key, { file: new Blob([png]), format: "text" }, headers)),
    );
    const again = await processRoute.POST(
      multipart(PROCESS, account.key, { file: new Blob([png]), format: "text" }, headers),
    );
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.json()).toEqual(first);
    await expectApiError(
      await processRoute.POST(multipart(PROCESS, account.key, { file: new Blob([png]), format: "markdown" }, headers)),
      "idempotency_mismatch",
    );
    // A raw body's options are its query: another query is another request.
    const rawHeaders = { "idempotency-key": `raw-${Date.now()}` };
    await expectOcrOk(
      await processRoute.POST(raw(`${PROCESS}?format=text`, account.key, png as BodyInit, "image/png", rawHeaders)),
    );
    await expectApiError(
      await processRoute.POST(raw(`${PROCESS}?format=json`, account.key, png as BodyInit, "image/png", rawHeaders)),
      "idempotency_mismatch",
    );
    expect(await account.balance()).toBe(3);
  });
});
