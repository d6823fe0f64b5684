import { describe, expect, it } from "vitest";
import * as creditsRoute from "@/app/api/credits/route";
import { createMcpRoute } from "@/lib/mcp";
import { generateApiKey } from "@/lib/keys";
import { expectKeyRefused, rpcRequest } from "../mcp/support";
import { waitForWindowRoom } from "../support/redis";
import { createAccount, expectApiError, withStore } from "./support";

/*
 * Failed key lookups are limited per client address (`settings.keys.keyFailuresPerAddressPerMinute`, 5 here: the
 * route instances below are given it; the constant is 30): each unknown or
 * revoked key costs a store round trip, so past the limit an address gets `429` with `Retry-After` — on REST and on
 * MCP alike, counted together — while other addresses, and valid keys from them, go on as before.
 */

const LIMIT = 5;
/** The routes as instances with that limit (`route.with({ settings })`, `createMcpRoute({ settings })`). */
const SETTINGS = { keys: { keyFailuresPerAddressPerMinute: LIMIT } };
const credits = creditsRoute.GET.with({ settings: SETTINGS });
const mcp = createMcpRoute({ settings: SETTINGS });
const CREDITS_URL = "http://localhost:3000/api/credits";

/**
 * A fresh client address per call, never one another test of this run has used (the instance remembers blocked
 * addresses for the rest of their minute; random ones collided now and then and failed CI), each in its own /24.
 */
let lastAddress = 0;
const newAddress = () => `198.18.${++lastAddress}.1`;

function getCredits(key: string, address: string): Promise<Response> {
  return credits(new Request(CREDITS_URL, { headers: { "x-api-key": key, "x-forwarded-for": address } }));
}

function mcpPing(key: string, address: string): Promise<Response> {
  return mcp.POST(
    rpcRequest({ jsonrpc: "2.0", id: 1, method: "ping" }, { key, headers: { "x-forwarded-for": address } }),
  );
}

async function expectKeyFailuresLimited(response: Response): Promise<void> {
  await expectApiError(response, "rate_limited", /unknown or revoked API keys from your address/);
  expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  expect(Number(response.headers.get("retry-after"))).toBeLessThanOrEqual(60);
}

describe("failed key lookups per client address (redis store)", () => {
  withStore("redis");

  it("REST: past the limit an address gets 429 with Retry-After, also for a valid key; other addresses are not affected", async () => {
    await waitForWindowRoom(60_000, 10_000);
    const account = await createAccount(3);
    const attacker = newAddress();
    const neighbour = newAddress();
    for (let i = 0; i < LIMIT; i++) await expectApiError(await getCredits(generateApiKey(), attacker), "unauthorized");
    await expectKeyFailuresLimited(await getCredits(generateApiKey(), attacker));
    // Refused before the lookup: a valid key from that address waits too.
    await expectKeyFailuresLimited(await getCredits(account.key, attacker));
    // Another address: its unknown keys are 401 as usual, and a valid key works.
    await expectApiError(await getCredits(generateApiKey(), neighbour), "unauthorized");
    expect((await getCredits(account.key, neighbour)).status).toBe(200);
  });

  it("MCP: the same limit, counted together with REST; a refused key is still 403 below it", async () => {
    await waitForWindowRoom(60_000, 10_000);
    const account = await createAccount(0);
    const attacker = newAddress();
    for (let i = 0; i < LIMIT - 1; i++)
      await expectKeyRefused(await mcpPing(generateApiKey(), attacker), /Invalid or revoked/);
    await expectApiError(await getCredits(generateApiKey(), attacker), "unauthorized"); // the 5th, over REST
    await expectKeyFailuresLimited(await mcpPing(generateApiKey(), attacker));
    await expectKeyFailuresLimited(await mcpPing(account.key, attacker));
    expect((await mcpPing(account.key, newAddress())).status).toBe(200);
  });

  it("malformed keys cost no lookup and are not counted; a missing key neither", async () => {
    await waitForWindowRoom(60_000, 10_000);
    const address = newAddress();
    for (let i = 0; i < LIMIT * 2; i++) {
      await expectApiError(await getCredits("ocr_short", address), "unauthorized");
      await expectApiError(
        await credits(new Request(CREDITS_URL, { headers: { "x-forwarded-for": address } })),
        "unauthorized",
      );
    }
    for (let i = 0; i < LIMIT; i++) await expectApiError(await getCredits(generateApiKey(), address), "unauthorized");
    await expectKeyFailuresLimited(await getCredits(generateApiKey(), address));
  });
});
