import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isApiError } from "@/lib/api/errors";
import { signUp } from "@/lib/accounts";
import { getBalance, grantTestCredits, listLedger, TEST_CREDITS, testCreditsAvailable } from "@/lib/credits";
import { createMemoryStore, getStore, installStore, resetStore } from "@/lib/store";
import { pushEnv } from "../support/env";
import { getEnv } from "@/lib/env";
import { withRedisStoreEnv } from "../support/redis";

/*
 * Issue 29 point 10: a newcomer on `npm run dev` (the embedded store, which the admin CLI cannot reach) gets test
 * credits from the settings page; a server on Redis — every production deployment — refuses them on the server,
 * whatever the page shows or a client posts (the settings action calls grantTestCredits).
 */

const newAccount = (label: string) =>
  signUp(
    getStore(),
    { email: `${label}-${Date.now()}@example.com`, password: "a long enough password" },
    { env: getEnv(), operator: true },
  );

describe("test credits on the embedded store", () => {
  let restoreEnv = () => {};
  beforeAll(async () => {
    restoreEnv = pushEnv({ REDIS_URL: undefined, FREE_CREDITS: "100" });
    await resetStore();
    installStore(createMemoryStore());
  });
  afterAll(async () => {
    await resetStore();
    restoreEnv();
  });

  it("are offered, and add TEST_CREDITS as a grant in the ledger", async () => {
    expect(testCreditsAvailable(getStore())).toBe(true);
    const account = await newAccount("dev");
    expect(await grantTestCredits(getStore(), account.id)).toEqual({ balance: 100 + TEST_CREDITS });
    expect(await getBalance(getStore(), account.id)).toBe(1_100);
    const [latest] = (await listLedger(getStore(), account.id, { limit: 1 })).entries;
    expect(latest).toMatchObject({ reason: "grant", delta: TEST_CREDITS, balanceAfter: 1_100 });
  });
});

describe("test credits on Redis", () => {
  withRedisStoreEnv("test-credits", { FREE_CREDITS: "100" });

  it("are not offered, and a grant is refused on the server: 403, the balance unchanged", async () => {
    expect(testCreditsAvailable(getStore())).toBe(false);
    const account = await newAccount("prod");
    const refused = await grantTestCredits(getStore(), account.id).catch((error: unknown) => error);
    expect(isApiError(refused) && [refused.code, refused.message]).toEqual([
      "forbidden",
      expect.stringContaining("only on a development server with the embedded store"),
    ]);
    expect(await getBalance(getStore(), account.id)).toBe(100);
  });
});
