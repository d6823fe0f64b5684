import { describe, expect, it } from "vitest";
import { inLanes, TimeoutError, withTimeout } from "@/lib/async";
import { apiCode, deadlineError } from "@/lib/api/errors";
import { isScopeEnded, requestScope, throwIfEnded, withinScope } from "@/lib/request-scope";
import { ApiError, isApiError } from "@/lib/api/errors";
import { describeError, errorLabel } from "@/lib/error-log";

describe("withTimeout", () => {
  it("passes the work's value and failure through when it settles first", async () => {
    await expect(withTimeout(Promise.resolve(7), 1_000, "late")).resolves.toBe(7);
    await expect(withTimeout(Promise.reject(new Error("own")), 1_000, "late")).rejects.toThrow("own");
  });

  it("rejects with a TimeoutError carrying the message, or with the given error, when the work is late", async () => {
    const never = new Promise<never>(() => undefined);
    const late = await withTimeout(never, 5, "no answer").catch((error: unknown) => error);
    expect(late).toBeInstanceOf(TimeoutError);
    expect((late as Error).message).toBe("no answer");
    const timeout = await withTimeout(never, 5, deadlineError).catch((error: unknown) => error);
    expect(isApiError(timeout) && timeout.code).toBe("timeout");
  });
});

describe("the request's one scope (lib/request-scope.ts)", () => {
  it("aborts its signal at the deadline, or when the client cancels; nested scopes only narrow", async () => {
    const scope = requestScope({ deadline: Date.now() + 20 });
    expect(scope.signal.aborted).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(isScopeEnded(scope.signal.reason) && scope.signal.reason.why).toBe("deadline");
    expect(() => throwIfEnded(scope.signal)).toThrow("deadline");

    const client = new AbortController();
    await withinScope({ deadline: Date.now() + 60_000, cancel: client.signal }, async (outer) => {
      const inner = requestScope({ deadline: Date.now() + 120_000 });
      expect(inner.deadline).toBe(outer.deadline);
      client.abort();
      expect(isScopeEnded(inner.signal.reason) && inner.signal.reason.why).toBe("cancelled");
    });
    const past = requestScope({ deadline: Date.now() - 1 });
    expect(past.signal.aborted).toBe(true);
  });
});

describe("inLanes", () => {
  it("runs every item once, in order of start, with at most `lanes` at once", async () => {
    const started: number[] = [];
    let running = 0;
    let peak = 0;
    await inLanes([0, 1, 2, 3, 4, 5, 6], 3, async (item, index) => {
      expect(index).toBe(item);
      started.push(item);
      peak = Math.max(peak, ++running);
      await new Promise((resolve) => setTimeout(resolve, 2));
      running--;
    });
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(peak).toBe(3);
  });

  it("rejects with the first failure; the other lanes take the items left", async () => {
    const done: number[] = [];
    const run = inLanes([0, 1, 2, 3], 2, async (item) => {
      if (item === 0) throw new Error("item 0");
      await new Promise((resolve) => setTimeout(resolve, 1));
      done.push(item);
    });
    await expect(run).rejects.toThrow("item 0");
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(done.sort()).toEqual([1, 2, 3]);
  });

  it("does nothing for no items", async () => {
    await expect(inLanes([], 4, () => Promise.reject(new Error("never")))).resolves.toBeUndefined();
  });
});

describe("error-log", () => {
  it("describeError: the stack of an Error, anything else as a string", () => {
    const error = new Error("boom");
    expect(describeError(error)).toBe(error.stack);
    expect(describeError("plain")).toBe("plain");
  });

  it("errorLabel: a code or a class name, never the message", () => {
    const system = Object.assign(new Error("connect ECONNREFUSED 10.0.0.1:6379"), { code: "ECONNREFUSED" });
    const api = new ApiError("unavailable", "The store is down");
    expect(errorLabel(system)).toBe("ECONNREFUSED");
    expect(errorLabel(api)).toBe("unavailable");
    expect(errorLabel(new TypeError("secret"))).toBe("TypeError");
    expect(errorLabel({ reason: "secret" })).toBe("error");
    // "api": only an ApiError's code counts.
    expect(errorLabel(system, apiCode)).toBe("Error");
    expect(errorLabel(api, apiCode)).toBe("unavailable");
  });
});
