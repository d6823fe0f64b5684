import { describe, expect, it } from "vitest";
import { isApiError } from "@/lib/api/errors";
import { acquireInFlight, inFlightAccounts, inFlightCount } from "@/lib/intake/in-flight";

/* The per-account limit on OCR requests in flight on one instance (route-level: tests/api/overload.test.ts). */
const account = () => `usr_${Math.random().toString(36).slice(2)}`;

function refusal(run: () => unknown) {
  try {
    run();
  } catch (error) {
    if (isApiError(error)) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("acquireInFlight", () => {
  it("past the limit: 429 rate_limited naming the limit, with Retry-After", () => {
    const userId = account();
    const releases = [1, 2].map(() => acquireInFlight(userId, { limit: 2 }));
    const error = refusal(() => acquireInFlight(userId, { limit: 2, retryAfterS: 7 }));
    expect(error).toMatchObject({ code: "rate_limited", status: 429, headers: { "Retry-After": "7" } });
    expect(error.message).toMatch(/at most 2 OCR requests per account/);
    releases.forEach((release) => release());
  });

  it("a release frees exactly one slot; releasing twice is harmless", () => {
    const userId = account();
    const first = acquireInFlight(userId, { limit: 2 });
    acquireInFlight(userId, { limit: 2 });
    first();
    first();
    const third = acquireInFlight(userId, { limit: 2 });
    expect(() => acquireInFlight(userId, { limit: 2 })).toThrow(/at most 2/);
    third();
  });

  it("other accounts are not affected", () => {
    const busy = account();
    const release = acquireInFlight(busy, { limit: 1 });
    expect(() => acquireInFlight(busy, { limit: 1 })).toThrow();
    const other = acquireInFlight(account(), { limit: 1 });
    other();
    release();
  });

  it("an account with nothing in flight is forgotten (memory does not grow with accounts seen)", () => {
    const userId = account();
    const before = inFlightAccounts();
    const release = acquireInFlight(userId, { limit: 1 });
    expect(inFlightCount(userId)).toBe(1);
    expect(inFlightAccounts()).toBe(before + 1);
    release();
    expect(inFlightCount(userId)).toBe(0);
    expect(inFlightAccounts()).toBe(before);
  });
});
