import { describe, expect, it } from "vitest";
import { GET, POST } from "@/app/api/cron/reservations/route";
import { getBalance, listLedger } from "@/lib/credits";
import { getStore } from "@/lib/store";
import { holdReadJob } from "../support/read-jobs";
import { createAccount, expectApiError, setEnv, withStore } from "./support";

/* GET /api/cron/reservations: the scheduled sweep of reservations that crashed instances left open. */
const SECRET = "s3cret-cron-value-0123456789";
withStore("redis", { CRON_SECRET: SECRET });

const call = (authorization?: string) =>
  GET(new Request("http://localhost:3000/api/cron/reservations", { headers: authorization ? { authorization } : {} }));

describe("GET /api/cron/reservations", () => {
  it("401 without the secret or with a wrong one; nothing swept", async () => {
    const account = await createAccount(5);
    await holdReadJob(getStore(), { userId: account.userId, pages: 2, deadline: Date.now() - 120_000 });
    await expectApiError(await call(), "unauthorized", /cron secret/);
    await expectApiError(await call(`Bearer ${SECRET}x`), "unauthorized", /cron secret/);
    await expectApiError(await call(SECRET), "unauthorized", /cron secret/);
    expect(await getBalance(getStore(), account.userId)).toBe(3);
  });

  it("with the secret: refunds overdue reservations (ledger `expired`) and says how many", async () => {
    const account = await createAccount(5);
    const requestId = `req_cron${Date.now()}`;
    const job = await holdReadJob(getStore(), {
      userId: account.userId,
      pages: 2,
      deadline: Date.now() - 120_000,
      requestId,
    });
    const response = await call(`Bearer ${SECRET}`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { success: boolean; found: number; refunded: number; credits: number };
    expect(body.success).toBe(true);
    expect(body.refunded).toBeGreaterThanOrEqual(1);
    expect(await getBalance(getStore(), account.userId)).toBe(5);
    expect((await listLedger(getStore(), account.userId)).entries[0]).toMatchObject({
      reason: "expired",
      delta: 2,
      requestId, // a read's refund names its request, as its charge does; its job ends failed
    });
    expect(await getStore().jobs.getJob(job.id)).toMatchObject({ status: "failed", creditsRefunded: 2 });
  });

  it("without CRON_SECRET: open on a development server, refused in production", async () => {
    let restore = setEnv({ CRON_SECRET: "", NODE_ENV: "development" });
    try {
      expect((await call()).status).toBe(200);
    } finally {
      restore();
    }
    restore = setEnv({ CRON_SECRET: "", NODE_ENV: "production" });
    try {
      await expectApiError(await call(), "unauthorized", /Set CRON_SECRET/);
    } finally {
      restore();
    }
  });

  it("other methods: 405", async () => {
    const response = await POST(new Request("http://localhost:3000/api/cron/reservations", { method: "POST" }));
    expect(response.status).toBe(405);
  });
});
