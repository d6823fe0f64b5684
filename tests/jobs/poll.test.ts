import { describe, expect, it } from "vitest";
import * as jobsRoute from "@/app/api/ocr/jobs/route";
import * as jobRoute from "@/app/api/ocr/jobs/[id]/route";
import { jobViewSchema, type JobViewBody } from "@/lib/api/schemas";
import { retryAfterFor } from "@/lib/http/jobs";
import { pollAfterSeconds, POLL_SECONDS } from "@/lib/jobs/view";
import { getStore } from "@/lib/store";
import { createAccount, ocrRequest, tinyPng, withStore } from "../api/support";
import { services } from "@/lib/services";

/*
 * Issue 29, point 11: a job's `Retry-After` (and its MCP task's `pollInterval`) says when its next change is likely,
 * from the job's pace, so that a poller that follows it asks about once per change.
 */

const T0 = Date.parse("2026-11-27T10:00:00.000Z");

function view(over: Partial<JobViewBody>): JobViewBody {
  return {
    success: true,
    jobId: "job_poll",
    status: "running",
    pageCount: 12,
    pagesTotal: 12,
    pagesDone: 0,
    pagesFailed: 0,
    creditsReserved: 12,
    creditsUsed: 0,
    creditsRefunded: 0,
    format: "text",
    inputSource: "base64",
    createdAt: new Date(T0).toISOString(),
    startedAt: new Date(T0).toISOString(),
    finishedAt: null,
    expiresAt: new Date(T0 + 86_400_000).toISOString(),
    links: { self: "/api/ocr/jobs/job_poll", result: "/api/ocr/jobs/job_poll/result" },
    ...over,
  };
}

describe("when to poll a job again", () => {
  it("follows the job's pace once pages are read: the time since it started over the pages settled, 1–30 s", () => {
    expect(pollAfterSeconds(view({ pagesDone: 2 }), T0 + 34_000, 3_000)).toBe(17);
    expect(pollAfterSeconds(view({ pagesDone: 1, pagesFailed: 1 }), T0 + 34_000, 3_000)).toBe(17);
    // Pages read side by side: 8 settled in 10 s is a change every 1.25 s.
    expect(pollAfterSeconds(view({ pagesDone: 8 }), T0 + 10_000, 3_000)).toBe(1);
    expect(pollAfterSeconds(view({ pagesDone: 1 }), T0 + 300, 3_000)).toBe(POLL_SECONDS.min);
    expect(pollAfterSeconds(view({ pagesDone: 1 }), T0 + 600_000, 3_000)).toBe(POLL_SECONDS.max);
  });

  it("before the first page: the expected time of a page, or half of what it has waited when that is longer", () => {
    expect(pollAfterSeconds(view({}), T0 + 500, 3_000)).toBe(3);
    expect(pollAfterSeconds(view({}), T0 + 14_000, 3_000)).toBe(7);
    expect(pollAfterSeconds(view({ status: "queued", startedAt: null }), T0 + 20_000, 3_000)).toBe(10);
    // The duration model of this process's pool, as the routes pass it (its starting estimate: 3 s a page).
    expect(retryAfterFor(view({}), services().pool, T0 + 100)).toBe(3);
  });

  it("none once the job has ended", () => {
    for (const status of ["succeeded", "failed", "cancelled"] as const)
      expect(pollAfterSeconds(view({ status }), T0, 3_000)).toBeNull();
  });

  it("a 12-page job at 17 s a page is polled about once a page (it was 165 polls at Retry-After: 1)", () => {
    let polls = 0;
    let now = T0;
    for (;;) {
      const done = Math.min(12, Math.floor((now - T0) / 17_000));
      const current = view(done === 12 ? { status: "succeeded", pagesDone: 12 } : { pagesDone: done });
      polls++;
      const wait = retryAfterFor(current, services().pool, now);
      if (wait === null) break;
      now += wait * 1000;
    }
    expect(polls).toBeGreaterThanOrEqual(13);
    expect(polls).toBeLessThanOrEqual(20);
  });
});

describe("Retry-After on the status route", () => {
  withStore("memory");

  it("before its first page the wait so far decides (started 20 s ago: 10); then the pace (one page in 20 s: 20)", async () => {
    const account = await createAccount(10);
    const submitted = await jobsRoute.POST(
      ocrRequest(
        { image: tinyPng("POLL 17").toString("base64") },
        { key: account.key, url: "http://localhost:3000/api/ocr/jobs" },
      ),
    );
    expect(submitted.status).toBe(202);
    const { jobId } = jobViewSchema.parse(await submitted.json());
    const status = () =>
      jobRoute.GET(
        ocrRequest(undefined, { key: account.key, method: "GET", url: `http://localhost:3000/api/ocr/jobs/${jobId}` }),
      );

    expect(await getStore().jobs.startJob(jobId, Date.now() - 20_000)).toBe(true);
    expect((await status()).headers.get("retry-after")).toBe("10");
    await getStore().jobs.storePages(jobId, [{ page: 1, payload: "{}" }], Date.now());
    const record = (await getStore().jobs.getJob(jobId))!;
    expect(record.pagesDone).toBe(1);
    // The job started 20 s ago; its one page settled: a change every ~20 s.
    const retryAfter = Number((await status()).headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(19);
    expect(retryAfter).toBeLessThanOrEqual(21);
  });
});
