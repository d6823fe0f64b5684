import { describe, expect, it } from "vitest";
import { jobSettings, workJobsFor, type JobWorkServices } from "@/lib/jobs";
import { createMemoryQueue } from "@/lib/jobs/queue/memory";
import { createMemoryStore } from "@/lib/store";
import { getEnv } from "@/lib/env";
import { services as processServices } from "@/lib/services";

/*
 * Issue 33: the job-work slice takes its services as an argument (an entry point hands down `services().jobWork`), so
 * a caller — here a test — gives it its own store, queue, settings and deliveries, with no environment variable and no
 * process-wide store or queue.
 */
describe("workJobsFor works with the services it is given", () => {
  function given(overrides: Partial<JobWorkServices> = {}) {
    const drained: number[] = [];
    const settings = jobSettings({ blockSeconds: 1 }, getEnv());
    const services: JobWorkServices = {
      store: createMemoryStore(),
      queue: createMemoryQueue(settings),
      // The process's engine pool (built lazily: no engine process starts for an empty queue).
      pool: processServices().pool,
      deliveries: null,
      settings,
      name: "test-work",
      languages: ["eng"],
      deliveryTimeoutMs: 1_000,
      drainDeliveries: async (budgetMs) => {
        drained.push(budgetMs);
        return 0;
      },
      ...overrides,
    };
    return { services, drained };
  }

  it("an empty queue: nothing worked, and the deliveries get what is left, at least their reserve", async () => {
    const { services, drained } = given();
    try {
      expect(await workJobsFor(2_000, services)).toEqual({ documents: 0, pages: 0 });
      // The reserve: a fifth of the budget, at most one attempt's budget and 5 s.
      expect(drained).toHaveLength(1);
      expect(drained[0]).toBeGreaterThanOrEqual(400);
      expect(drained[0]).toBeLessThanOrEqual(2_000);
    } finally {
      await services.queue?.close();
    }
  });

  it("no queue (a deployment without TCP Redis): nothing worked, no delivery attempted", async () => {
    const { services, drained } = given({ queue: null });
    expect(await workJobsFor(2_000, services)).toEqual({ documents: 0, pages: 0 });
    expect(drained).toEqual([]);
  });
});
