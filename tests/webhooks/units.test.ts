import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { jobEndEvent, jobEventId, newSigningSecret, retryDelay, signingSecrets } from "@/lib/webhooks";
import { parseRetryAfter } from "@/lib/webhooks/deliver";
import type { JobRecord } from "@/lib/store";

describe("webhook units", () => {
  it("retry delays double from the base, are capped at 6 h, jittered by at most 10 %, and span about a day by default", () => {
    const settings = { retryBaseMs: 60_000, retryCapMs: 6 * 3_600_000 };
    expect([1, 2, 3, 4].map((failed) => retryDelay(failed, settings, 0.5))).toEqual([
      60_000, 120_000, 240_000, 480_000,
    ]);
    expect(retryDelay(20, settings, 0.5)).toBe(6 * 3_600_000);
    expect(retryDelay(1, settings, 0)).toBe(54_000);
    expect(retryDelay(1, settings, 1)).toBe(66_000);
    // 13 attempts: 12 delays.
    const total = Array.from({ length: 12 }, (_, i) => retryDelay(i + 1, settings, 0.5)).reduce(
      (sum, delay) => sum + delay,
      0,
    );
    expect(total / 3_600_000).toBeGreaterThan(22);
    expect(total / 3_600_000).toBeLessThan(30);
  });

  it("Retry-After: seconds or an HTTP date, in ms from now; nothing for anything else or the past", () => {
    const now = Date.UTC(2026, 10, 24, 9);
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter(" 5 ", now)).toBe(5_000);
    expect(parseRetryAfter(new Date(now + 90_000).toUTCString(), now)).toBe(90_000);
    expect(parseRetryAfter(new Date(now - 90_000).toUTCString(), now)).toBeUndefined();
    expect(parseRetryAfter("0", now)).toBeUndefined();
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it("secrets: whsec_ and 32 random bytes; the previous one signs only until its time", () => {
    const secret = newSigningSecret();
    expect(Buffer.from(secret.slice(6), "base64")).toHaveLength(32);
    expect(() => new Webhook(secret)).not.toThrow();
    const previous = newSigningSecret();
    expect(signingSecrets({ secret, previousSecret: previous, previousUntil: 2_000 }, 1_000)).toEqual([
      secret,
      previous,
    ]);
    expect(signingSecrets({ secret, previousSecret: previous, previousUntil: 2_000 }, 2_000)).toEqual([secret]);
    expect(signingSecrets({}, 1_000)).toEqual([]);
  });

  it("a job's end event: its counters and absolute links, an id derived from the job's, never its text", () => {
    const record: JobRecord = {
      id: "job_AAAAAAAAAAAAAAAAAAAAAA",
      userId: "usr_x",
      requestId: "req_x",
      status: "failed",
      createdAt: Date.UTC(2026, 10, 24, 9),
      finishedAt: Date.UTC(2026, 10, 24, 10),
      deadline: 0,
      expiresAt: Date.UTC(2026, 10, 25, 10),
      fileType: "pdf",
      inputSource: "url",
      bytes: 10,
      sourceChunks: 1,
      pageCount: 3,
      selection: "1-3",
      pagesTotal: 3,
      pagesDone: 0,
      pagesFailed: 3,
      creditsReserved: 3,
      creditsUsed: 0,
      creditsRefunded: 3,
      format: "text",
      language: "auto",
      error: JSON.stringify({ code: "unreadable_document", message: "broken" }),
      webhookUrl: "https://example.com/hook",
      origin: "https://ocr.example.com",
    };
    expect(jobEndEvent(record)).toEqual({
      type: "job.failed",
      timestamp: "2026-11-24T10:00:00.000Z",
      data: {
        id: record.id,
        status: "failed",
        pageCount: 3,
        pagesTotal: 3,
        pagesDone: 0,
        pagesFailed: 3,
        creditsReserved: 3,
        creditsUsed: 0,
        creditsRefunded: 3,
        format: "text",
        createdAt: "2026-11-24T09:00:00.000Z",
        finishedAt: "2026-11-24T10:00:00.000Z",
        expiresAt: "2026-11-25T10:00:00.000Z",
        error: { code: "unreadable_document", message: "broken" },
        statusUrl: `https://ocr.example.com/api/ocr/jobs/${record.id}`,
        resultUrl: `https://ocr.example.com/api/ocr/jobs/${record.id}/result`,
      },
    });
    expect(jobEventId(record.id)).toMatch(/^msg_[\w-]{27}$/);
    expect(jobEventId(record.id)).toBe(jobEventId(record.id));
    expect(jobEventId(record.id)).not.toBe(jobEventId("job_BAAAAAAAAAAAAAAAAAAAAA"));
  });

  it("docs/api.md's curl + openssl recipe gives the reference vector's signature (the block run as printed)", () => {
    const markdown = fs.readFileSync(path.resolve(import.meta.dirname, "../../docs/api.md"), "utf8");
    const start = markdown.indexOf("**curl + openssl**");
    expect(start).toBeGreaterThan(0);
    const block = /```sh\n([\s\S]*?)\n```/.exec(markdown.slice(start));
    expect(block).not.toBeNull();
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "webhook-recipe-"));
    try {
      const output = execFileSync("sh", ["-c", block![1]!], { cwd, encoding: "utf8" });
      expect(output.trim()).toBe("g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
      // The same as the package signs.
      const signed = new Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").sign(
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        new Date(1614265330_000),
        '{"test": 2432232314}',
      );
      expect(signed).toBe(`v1,${output.trim()}`);
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  });
});
