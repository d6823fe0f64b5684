/**
 * A stand-in for a server instance with requests in flight, for tests/credits/reservations.test.ts:
 * `node --conditions=react-server --import tsx hold-reservations.ts <userId> <count> <deadline>` (the condition lets
 * lib/store's "server-only" load) reserves `count` requests of 2 pages each on the store the environment names
 * (REDIS_URL, REDIS_PREFIX), prints "reserved", and waits to be killed.
 */
import { randomBytes } from "node:crypto";
import { reserveCredits } from "@/lib/credits";
import { getStore } from "@/lib/store";

const [userId, count, deadline] = process.argv.slice(2);
if (!userId || !count || !deadline) {
  console.error("usage: hold-reservations.ts <userId> <count> <deadline>");
  process.exit(2);
}
for (let i = 0; i < Number(count); i++) {
  const result = await reserveCredits(getStore(), {
    userId,
    pages: 2,
    requestId: `req_${randomBytes(8).toString("hex")}`,
    deadline: Number(deadline),
  });
  if (!result.ok) throw new Error(`could not reserve: balance ${result.balance}`);
}
process.stdout.write("reserved\n");
setInterval(() => undefined, 60_000);
