import { describe, expect, it } from "vitest";
import { HeldPlaces, judgeAdmission, judgeFollowing } from "@/lib/ocr/pool/admission";
import { DurationModel, ESTIMATE_HISTORY, expectedWaitMs, INITIAL_ESTIMATES, sizeOf } from "@/lib/ocr/pool/estimates";
import { HeavyTurn } from "@/lib/ocr/pool/heavy-turn";
import { FairQueue } from "@/lib/ocr/pool/queue";
import { expectOcrError } from "../support/ocr";

// The engine pool's pure parts, without processes: the duration model, admission, the round-robin queue and the
// one-at-a-time turn. The pool itself (processes, deadlines, memory) is tested in isolation.test.ts and hostile.test.ts.

describe("the duration model", () => {
  it("sizes a job by √megapixels, at least ½, and 1 when unknown", () => {
    expect(sizeOf(undefined)).toBe(1);
    expect(sizeOf(4e6)).toBe(2);
    expect(sizeOf(1e6)).toBe(1);
    expect(sizeOf(1)).toBe(0.5);
  });

  it("starts from the measured estimates, scaled by the job's size", () => {
    const model = new DurationModel();
    expect(model.estimate("read-image")).toBe(INITIAL_ESTIMATES["read-image"]);
    expect(model.estimate("read-image", 4e6)).toBe(2 * INITIAL_ESTIMATES["read-image"]);
    expect(model.estimate("inspect-pdf")).toBe(INITIAL_ESTIMATES["inspect-pdf"]);
  });

  it("learns milliseconds per unit of size, the starting guess counting as one job of size 1", () => {
    const model = new DurationModel();
    model.learn("read-pdf-page", 1_000, 1);
    // (3000 + 1000) / (1 + 1) = 2000 per unit of size.
    expect(model.estimate("read-pdf-page")).toBe(2_000);
    expect(model.estimate("read-pdf-page", 4e6)).toBe(4_000);
    // Other kinds are not affected.
    expect(model.estimate("read-image")).toBe(INITIAL_ESTIMATES["read-image"]);
  });

  it("remembers the last jobs only", () => {
    const model = new DurationModel();
    for (let i = 0; i < ESTIMATE_HISTORY; i++) model.learn("read-image", 10_000, 1);
    for (let i = 0; i < ESTIMATE_HISTORY; i++) model.learn("read-image", 100, 1);
    // Only the 100 ms jobs and the starting guess remain.
    expect(model.estimate("read-image")).toBe(
      Math.round((INITIAL_ESTIMATES["read-image"] + 100 * ESTIMATE_HISTORY) / (ESTIMATE_HISTORY + 1)),
    );
  });
});

describe("the expected wait", () => {
  it("is 0 with nothing ahead and a process free", () => {
    expect(expectedWaitMs({ processes: 2, heldMs: 0, queuedMs: [], running: [] })).toBe(0);
    expect(
      expectedWaitMs({ processes: 2, heldMs: 0, queuedMs: [], running: [{ estimateMs: 1_000, elapsedMs: 0 }] }),
    ).toBe(500);
  });

  it("spreads held places, waiting jobs and what running jobs have left over the lane's processes", () => {
    const running = [{ estimateMs: 3_000, elapsedMs: 1_000 }];
    expect(expectedWaitMs({ processes: 2, heldMs: 1_000, queuedMs: [2_000, 2_000], running })).toBe(
      (1_000 + 4_000 + 2_000) / 2,
    );
  });

  it("counts a job past its estimate as done, unless it has a processor budget: then as long again, up to the budget", () => {
    const overdue = { estimateMs: 1_000, elapsedMs: 5_000 };
    expect(expectedWaitMs({ processes: 1, heldMs: 0, queuedMs: [], running: [overdue] })).toBe(0);
    expect(
      expectedWaitMs({ processes: 1, heldMs: 0, queuedMs: [], running: [{ ...overdue, cpuBudgetMs: 20_000 }] }),
    ).toBe(5_000);
    expect(
      expectedWaitMs({ processes: 1, heldMs: 0, queuedMs: [], running: [{ ...overdue, cpuBudgetMs: 3_000 }] }),
    ).toBe(3_000);
  });
});

describe("admission", () => {
  const question = { waitMs: 0, queued: 0, queueLimit: 4, estimateMs: 2_000, deadline: 60_000, now: 0 };

  it("admits on an idle lane, whatever the deadline", () => {
    expect(() => judgeAdmission({ ...question, deadline: 1 })).not.toThrow();
  });

  it("refuses what could not start and do a second of work before its deadline, with a retry after the wait", async () => {
    // 40 s of wait counted a quarter longer (50 s) and 1 s of work fit in 60 s; 48 s (60 s) do not.
    expect(() => judgeAdmission({ ...question, waitMs: 40_000 })).not.toThrow();
    const refused = await expectOcrError(() => judgeAdmission({ ...question, waitMs: 48_000 }), "overloaded");
    expect(refused.retryAfterSeconds).toBe(48);
  });

  it("refuses when the queue limit already waits", async () => {
    await expectOcrError(() => judgeAdmission({ ...question, queued: 4 }), "overloaded");
  });

  it("lets a later job of an admitted request wait, up to four times the queue limit", async () => {
    expect(() => judgeFollowing(15, 4)).not.toThrow();
    await expectOcrError(() => judgeFollowing(16, 4), "overloaded");
  });

  it("holds a place until it is released, once", () => {
    const held = new HeldPlaces();
    const first = held.hold(2_000);
    held.hold(500);
    expect(held).toMatchObject({ count: 2, ms: 2_500 });
    first.release();
    first.release();
    expect(held).toMatchObject({ count: 1, ms: 500 });
  });
});

describe("the round-robin queue", () => {
  const job = (tenant: string, session: string, n: number) => ({ tenant, session, n });

  it("serves tenants in turn, then their requests in turn", () => {
    const queue = new FairQueue<ReturnType<typeof job>>();
    for (const entry of [job("a", "a1", 1), job("a", "a1", 2), job("a", "a2", 3), job("b", "b1", 4), job("b", "b1", 5)])
      queue.push(entry);
    expect(queue.count).toBe(5);
    const order: number[] = [];
    for (let entry = queue.shift(); entry; entry = queue.shift()) order.push(entry.n);
    expect(order).toEqual([1, 4, 3, 5, 2]);
    expect(queue.isEmpty).toBe(true);
  });

  it("with what each tenant holds: the first of those holding the fewest, so a tenant with a process waits behind one without", () => {
    const queue = new FairQueue<ReturnType<typeof job>>();
    for (const entry of [job("a", "a1", 1), job("a", "a2", 2), job("b", "b1", 3), job("c", "c1", 4)]) queue.push(entry);
    expect([...queue.waitingTenants()]).toEqual(["a", "b", "c"]);
    const holding = new Map([
      ["a", 1],
      ["b", 1],
    ]);
    // Round-robin alone would serve a first.
    expect(queue.shift((tenant) => holding.get(tenant) ?? 0)?.n).toBe(4);
    // Equal holdings: round-robin order.
    expect(queue.shift((tenant) => holding.get(tenant) ?? 0)?.n).toBe(1);
    holding.set("a", 2);
    expect(queue.shift((tenant) => holding.get(tenant) ?? 0)?.n).toBe(3);
    expect(queue.shift((tenant) => holding.get(tenant) ?? 0)?.n).toBe(2);
    expect(queue.isEmpty).toBe(true);
  });

  it("takes out one job, or a session's jobs", () => {
    const queue = new FairQueue<ReturnType<typeof job>>();
    const entries = [job("a", "a1", 1), job("a", "a1", 2), job("b", "a1", 3), job("b", "b1", 4)];
    for (const entry of entries) queue.push(entry);
    queue.remove(entries[3]!);
    expect(queue.takeSession("a1").map((entry) => entry.n)).toEqual([1, 2, 3]);
    expect(queue.isEmpty).toBe(true);
  });
});

describe("the heavy recognizer's turn", () => {
  const taker = (name: string, granted: string[]) => ({ busy: true, connected: true, grant: () => granted.push(name) });

  it("goes to one process at a time, in the order asked, skipping those gone", () => {
    const granted: string[] = [];
    const turn = new HeavyTurn<ReturnType<typeof taker>>();
    const [a, b, c] = [taker("a", granted), taker("b", granted), taker("c", granted)];
    turn.acquire(a);
    turn.acquire(b);
    turn.acquire(c);
    turn.acquire(b); // asked twice: still once in line
    expect(granted).toEqual(["a"]);
    b.connected = false;
    turn.release(a);
    expect(granted).toEqual(["a", "c"]);
    turn.release(c);
    turn.acquire({ ...taker("idle", granted), busy: false }); // only a busy process asks
    expect(granted).toEqual(["a", "c"]);
  });
});
