/**
 * A stand-in for a server instance with requests in flight, for tests/credits/reservations.test.ts:
 * `node --conditions=react-server --import tsx hold-reservations.ts <userId> <count> <deadline>` (the condition lets
 * lib/store's "server-only" load) reserves `count` reads of 2 pages each (their jobs, lib/jobs/inline.ts) on the store the environment names
 * (REDIS_URL, REDIS_PREFIX), prints "reserved", and waits to be killed.
 */
import { getStore } from "@/lib/store";
import { holdReadJob } from "../support/read-jobs";

const [userId, count, deadline] = process.argv.slice(2);
if (!userId || !count || !deadline) {
  console.error("usage: hold-reservations.ts <userId> <count> <deadline>");
  process.exit(2);
}
for (let i = 0; i < Number(count); i++) {
  await holdReadJob(getStore(), { userId, pages: 2, deadline: Number(deadline) });
}
process.stdout.write("reserved\n");
setInterval(() => undefined, 60_000);
