import { ApiError } from "@/lib/api/errors";
import type { Store } from "@/lib/store";
import { grantCredits } from "./credits";

/*
 * Credits for trying the service on a development server (issue 29 point 10). With the embedded store (`npm run dev`
 * without Redis) the admin CLI cannot reach the server's memory, so the settings page offers these instead; with Redis
 * (every production deployment: production refuses the embedded store) they do not exist — checked here, on the
 * server, whatever a page shows or a client posts. Operators grant real credits with `npm run admin -- grant`.
 */

/** Credits one press of the settings page's button adds: a 117-page textbook, and then some. */
export const TEST_CREDITS = 1_000;
/** No balance grows past this by test credits (a held-down button makes no six-figure balances). */
const TEST_CREDITS_CEILING = 100_000;

/** Whether this server (its store `store`) gives test credits: only on the embedded development store. */
export function testCreditsAvailable(store: Store): boolean {
  return store.kind === "memory";
}

/** Add `TEST_CREDITS` to the account (a `grant` in its ledger); refused unless `testCreditsAvailable()`. */
export async function grantTestCredits(store: Store, userId: string): Promise<{ balance: number }> {
  if (!testCreditsAvailable(store)) {
    throw new ApiError(
      "forbidden",
      "Test credits exist only on a development server with the embedded store; an operator grants credits with " +
        "npm run admin -- grant",
    );
  }
  const balance = await store.credits.getBalance(userId);
  if (balance >= TEST_CREDITS_CEILING) return { balance };
  return grantCredits(store, { userId, credits: Math.min(TEST_CREDITS, TEST_CREDITS_CEILING - balance) });
}
