// The webhook flood of issue 29 (point 2), measured: `tsx bench/webhook-flood.ts [events] [processes]`.
//
// One account queues `events` (default 240) job events for a receiver that accepts the connection and never answers;
// another account's event goes to a receiver that answers at once. `processes` (default 3: two instances and a
// worker) delivery workers take them from the real BullMQ `webhooks` queue on the test Redis (REDIS_URL, default
// 127.0.0.1:6379, a key prefix of its own, deleted afterwards), with the default timeout (10 s). Prints how long the
// victim's event took from being queued to reaching its receiver, and how many of the flood's attempts were in flight
// at most. Events are queued as `announceJobEnd` queues them (`services().deliveries.add`), which is how a job's end
// reaches the queue whatever ended it.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createTestPrefix, deleteKeysWithPrefix, TEST_REDIS_URL } from "@/tests/support/redis";
import { startWebhookReceiver, waitFor } from "@/tests/support/webhook-receiver";

const worker = process.argv[2] === "--worker";

if (worker) {
  const { services } = await import("@/lib/services");
  services().deliveries?.startWorker();
  process.on("SIGTERM", () => process.exit(0));
  setInterval(() => undefined, 60_000);
} else {
  const events = Number(process.argv[2] ?? 240);
  const processes = Number(process.argv[3] ?? 3);
  const prefix = createTestPrefix("webhook-flood");
  const env = {
    ...process.env,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefix,
    URL_ALLOW_HOSTS: "127.0.0.1",
    LOG_REQUESTS: "false",
  };
  Object.assign(process.env, env);
  const { resetDeliveryQueue, rotateWebhookSecret } = await import("@/lib/webhooks");
  const { services } = await import("@/lib/services");
  const { getStore } = await import("@/lib/store");

  const sink = await startWebhookReceiver();
  const victimReceiver = await startWebhookReceiver();
  const attacker = `usr_flood${randomBytes(6).toString("hex")}`;
  const victim = `usr_victim${randomBytes(6).toString("hex")}`;
  sink.secret = (await rotateWebhookSecret(getStore(), attacker)).secret;
  victimReceiver.secret = (await rotateWebhookSecret(getStore(), victim)).secret;
  sink.script = Array.from({ length: events * 13 }, () => "hang" as const);
  const delivery = (userId: string, url: string, n: number) => {
    const type = "job.cancelled";
    const payload = JSON.stringify({ type, timestamp: new Date().toISOString(), data: { id: `job_${n}` } });
    return {
      eventId: `msg_${randomBytes(12).toString("base64url")}`,
      userId,
      jobId: `job_flood${n}`,
      type,
      url,
      payload,
    };
  };

  const children: ChildProcess[] = [];
  for (let i = 0; i < processes; i++) {
    children.push(
      spawn(process.execPath, [...process.execArgv, import.meta.filename, "--worker"], { env, stdio: "inherit" }),
    );
  }
  let mostOpen = 0;
  const sampler = setInterval(() => (mostOpen = Math.max(mostOpen, sink.openConnections())), 20);
  try {
    const queue = services().deliveries!;
    for (let n = 0; n < events; n++) await queue.add(delivery(attacker, sink.url, n));
    await waitFor(() => (sink.received.length > 0 ? true : undefined), 60_000, "the flood's first attempt");
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const queuedAt = Date.now();
    await queue.add(delivery(victim, victimReceiver.url, 0));
    const arrived = await waitFor(() => victimReceiver.received[0], 600_000, "the victim's event");
    console.info(
      JSON.stringify({
        events,
        processes,
        victimDelayMs: arrived.at - queuedAt,
        floodAttemptsBeforeVictim: sink.received.length,
        floodInFlightAtMost: mostOpen,
      }),
    );
  } finally {
    clearInterval(sampler);
    for (const child of children) child.kill("SIGTERM");
    await resetDeliveryQueue();
    await getStore().close();
    await sink.close();
    await victimReceiver.close();
    await deleteKeysWithPrefix(prefix);
  }
  process.exit(0);
}
