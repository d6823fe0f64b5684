import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { listLedger, sweepExpiredReservations } from "@/lib/credits";
import { getStore } from "@/lib/store";
import { createAccount, withStore } from "../api/support";

/*
 * Issue 29, point 6: a job whose reservation the sweeper refunded after its deadline (its process died) showed
 * `creditsRefunded: 0` once it ended, though the ledger had the refund. It shows what came back.
 */

describe.each(["redis", "memory"] as const)("a job swept at its deadline (%s store)", (kind) => {
  withStore(kind);

  it("one page read of 4, the rest refunded by the sweeper: the ended job says 3 refunded, as the ledger does", async () => {
    const account = await createAccount(10);
    const jobs = getStore().jobs;
    const jobId = `job_${randomBytes(16).toString("base64url")}`;
    const now = Date.now();
    const day = new Date(now).toISOString().slice(0, 10);
    const created = await jobs.createJob(
      {
        id: jobId,
        userId: account.userId,
        requestId: jobId,
        createdAt: now - 10_000,
        deadline: now - 5_000,
        expiresAt: now + 600_000,
        fileType: "png",
        inputSource: "base64",
        bytes: 8,
        sourceChunks: 1,
        pageCount: 4,
        selection: "1-4",
        pagesTotal: 4,
        creditsReserved: 4,
        format: "text",
        language: "eng",
      },
      {
        entry: {
          id: `led_${randomBytes(8).toString("hex")}`,
          at: new Date(now).toISOString(),
          reason: "ocr",
          requestId: jobId,
        },
        day,
        maxQueuedPages: 1_000,
        ttlMs: 600_000,
      },
    );
    expect(created.ok).toBe(true);
    await jobs.startJob(jobId, now);
    const page = {
      number: 1,
      width: 10,
      height: 10,
      source: "ocr",
      rotation: 0,
      skew: 0,
      confidence: 90,
      text: "A",
      blocks: [],
      lineStyles: [],
    };
    const { encodePage } = await import("@/lib/jobs/payload");
    expect(
      (
        await jobs.storePages(
          jobId,
          [
            {
              page: 1,
              payload: encodePage({
                page: page as never,
                language: { langs: ["eng"], auto: false },
                readBy: "t",
                ms: 1,
              }),
            },
          ],
          now,
        )
      ).stored,
    ).toBe(1);
    expect(await account.balance()).toBe(6);

    const swept = await sweepExpiredReservations(getStore(), { now: now + 60_000, graceMs: 0 });
    expect(swept.credits).toBeGreaterThanOrEqual(3);
    expect(await account.balance()).toBe(9);
    const ended = await jobs.endJob(jobId, {
      end: "fail",
      error: JSON.stringify({ code: "timeout", message: "deadline" }),
      now: now + 61_000,
      resultTtlMs: 600_000,
      entry: {
        id: `led_${randomBytes(8).toString("hex")}`,
        at: new Date().toISOString(),
        reason: "refund",
        requestId: jobId,
      },
      day,
    });
    expect(ended).toMatchObject({ refunded: 0 });
    expect(await jobs.getJob(jobId)).toMatchObject({ creditsReserved: 4, creditsUsed: 1, creditsRefunded: 3 });
    expect(await account.balance()).toBe(9);
    const entries = (await listLedger(getStore(), account.userId, { limit: 20 })).entries.filter(
      (entry) => entry.requestId === jobId,
    );
    expect(entries.map((entry) => [entry.reason, entry.delta])).toContainEqual(["expired", 3]);
  });
});
