import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { characterErrorRate } from "@/bench/metrics";
import { webhookEventSchema } from "@/lib/api/schemas";
import { ensureJobRunner, getJobView, resetWorkQueue, stopJobRunner } from "@/lib/jobs";
import { jobEventId, newSigningSecret, resetDeliveryQueue, rotateWebhookSecret } from "@/lib/webhooks";
import { FIXTURE_DIR, createAccount, groundTruth, withStore } from "../api/support";
import {
  startWebhookReceiver,
  waitFor,
  type ReceivedDelivery,
  type WebhookReceiver,
} from "../support/webhook-receiver";
import { runCli, withBuiltCli, withTempDirs, withTestServer, type CliRun } from "./support";
import { getStore } from "@/lib/store";
import { getEnv } from "@/lib/env";
import { services } from "@/lib/services";

/*
 * Webhooks from the command line: `ocr extract --webhook` (the bundled CLI in a child process, the real routes, a job
 * runner and the webhook worker in this process on a real Redis with BullMQ, a real receiver), and
 * `ocr webhooks verify` on the deliveries that receiver saved, and on the Standard Webhooks reference vector.
 */

const PNG = path.join(FIXTURE_DIR, "paragraph.png");
/** The reference vector of the Standard Webhooks libraries' tests (standard-webhooks/standard-webhooks). */
const VECTOR = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: "1614265330",
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};

withStore("redis", { URL_ALLOW_HOSTS: "127.0.0.1" });
const cli = withBuiltCli();
const server = withTestServer();
const tempDir = withTempDirs();
let receiver: WebhookReceiver;
let dir: string;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  // The runner's delivery queue retries after 200 ms (the constant is a minute).
  ensureJobRunner(services({ webhooks: { retryBaseMs: 200 } }));
  dir = tempDir("webhooks");
});

afterAll(async () => {
  await stopJobRunner();
  await resetDeliveryQueue();
  await resetWorkQueue();
  await receiver.close();
});

afterEach(() => {
  server.current.requests.length = 0;
});

function ocr(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  return runCli(cli.path, args, { env: { OCR_BASE_URL: server.current.baseUrl, ...env }, timeoutMs: 120_000 });
}

const save = (name: string, value: unknown) => {
  const file = path.join(dir, name);
  fs.writeFileSync(file, typeof value === "string" ? value : JSON.stringify(value, null, 2));
  return file;
};

describe("ocr extract --webhook", () => {
  let delivery: ReceivedDelivery;
  let secret: string;

  it("sends the document as a job with webhook.url, prints its text; the job's end reaches the receiver, signed", async () => {
    const account = await createAccount(5);
    secret = (await rotateWebhookSecret(getStore(), account.userId)).secret;
    receiver.secret = secret;
    const run = await ocr(["extract", PNG, "--webhook", receiver.url], { FETCH_MCP_SERVER_API_KEY: account.key });
    expect(run.code, run.stderr).toBe(0);
    expect(characterErrorRate(run.stdout, groundTruth("paragraph.png"))).toBeLessThan(0.05);
    expect(server.current.requests.some((request) => request.path === "/api/ocr/process")).toBe(false);
    const submitted = server.current.requests.find((request) => request.path === "/api/ocr/jobs")!;
    // A local file goes as the raw body (issue 29 point 8): its webhook in the query.
    expect(new URLSearchParams(submitted.search).get("webhook")).toBe(receiver.url);
    const jobId = /job_[\w-]{22}/.exec(run.stderr)![0];

    delivery = await waitFor(
      () => receiver.received.find((item) => item.headers["webhook-id"] === jobEventId(jobId)),
      60_000,
      "the job's event",
    );
    expect(delivery.refused).toBeUndefined();
    expect(webhookEventSchema.parse(delivery.event)).toMatchObject({
      type: "job.succeeded",
      data: { id: jobId, pagesDone: 1, creditsUsed: 1 },
    });
    expect(await account.balance()).toBe(4);

    // `ocr jobs get` says where the event went and how.
    await waitFor(
      async () =>
        (await getJobView(getStore(), getEnv(), services().deliveries, account.userId, jobId)).webhook?.deliveries
          .length
          ? true
          : undefined,
      30_000,
      "the recorded attempt",
    );
    const got = await ocr(["jobs", "get", jobId], { FETCH_MCP_SERVER_API_KEY: account.key });
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toMatch(
      new RegExp(`webhook: +${receiver.url.replace(/[.]/g, "\\.")} — attempt 1 .*: delivered \\(HTTP 200\\)`),
    );
  }, 120_000);

  it("refuses --webhook with --sync or a non-http URL (usage); the service's 400 for a private address (exit 5, nothing charged)", async () => {
    const account = await createAccount(5);
    await rotateWebhookSecret(getStore(), account.userId);
    const env = { FETCH_MCP_SERVER_API_KEY: account.key };
    const sync = await ocr(["extract", PNG, "--webhook", receiver.url, "--sync"], env);
    expect(sync.code).toBe(2);
    expect(sync.stderr).toContain("--webhook is for jobs");
    const ftp = await ocr(["extract", PNG, "--webhook", "ftp://example.com/x"], env);
    expect(ftp.code).toBe(2);
    const privateUrl = await ocr(["extract", PNG, "--webhook", "https://10.0.0.1/hook"], env);
    expect(privateUrl.code).toBe(5);
    expect(privateUrl.stderr).toMatch(
      /paragraph\.png: invalid_request: webhook\.url: URL not allowed: 10\.0\.0\.1 is not a public address/,
    );
    expect(await account.balance()).toBe(5);
  });

  describe("ocr webhooks verify", () => {
    const env = () => ({ OCR_WEBHOOK_SECRET: secret });

    it("verifies a saved delivery (--file) and prints its event", async () => {
      const file = save("saved.json", { headers: delivery.headers, body: delivery.body });
      const run = await ocr(["webhooks", "verify", "--file", file], env());
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual(JSON.parse(delivery.body));
      expect(run.stderr).toMatch(
        new RegExp(`verified: job\\.succeeded ${delivery.headers["webhook-id"]}, signed 20\\d\\d-`),
      );
      expect(run.stderr).not.toContain("note:");
      // The secret as a flag works too.
      expect((await ocr(["webhooks", "verify", "--file", file, "--secret", secret])).code).toBe(0);
    });

    it("verifies headers (as curl -D writes them) and a raw body given apart", async () => {
      const headers = save(
        "headers.txt",
        [
          "POST /hooks/ocr HTTP/1.1",
          ...Object.entries(delivery.headers).map(
            ([name, value]) => `${name.replace(/^webhook/, "Webhook")}: ${value}`,
          ),
          "",
        ].join("\r\n"),
      );
      const body = save("body.json", delivery.body);
      const run = await ocr(["webhooks", "verify", "--headers", headers, "--body", body], env());
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ type: "job.succeeded" });
    });

    it("refuses a tampered body and a wrong secret (exit 3)", async () => {
      const tampered = save("tampered.json", {
        headers: delivery.headers,
        body: delivery.body.replace('"pagesDone":1', '"pagesDone":2'),
      });
      const run = await ocr(["webhooks", "verify", "--file", tampered], env());
      expect(run.code).toBe(3);
      expect(run.stderr).toMatch(/not verified/);
      expect(run.stdout).toBe("");
      const good = save("good.json", { headers: delivery.headers, body: delivery.body });
      const wrong = await ocr(["webhooks", "verify", "--file", good], { OCR_WEBHOOK_SECRET: newSigningSecret() });
      expect(wrong.code).toBe(3);
    });

    it("checks the Standard Webhooks reference vector: its signature is right, and it is far too old for a live receiver", async () => {
      const file = save("vector.json", {
        headers: {
          "webhook-id": VECTOR.id,
          "webhook-timestamp": VECTOR.timestamp,
          "webhook-signature": VECTOR.signature,
        },
        body: VECTOR.body,
      });
      const run = await ocr(["webhooks", "verify", "--file", file], { OCR_WEBHOOK_SECRET: VECTOR.secret });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain(`verified: event ${VECTOR.id}, signed 2021-02-25T15:02:10.000Z`);
      expect(run.stderr).toMatch(
        /note: the signature is right; the delivery is \d+ days old: a live receiver refuses it/,
      );
      expect(JSON.parse(run.stdout)).toEqual({ test: 2432232314 });
      // One character of the signature changed: refused.
      const forged = save("forged.json", {
        headers: {
          "webhook-id": VECTOR.id,
          "webhook-timestamp": VECTOR.timestamp,
          "webhook-signature": VECTOR.signature.replace("g0h", "g1h"),
        },
        body: VECTOR.body,
      });
      expect((await ocr(["webhooks", "verify", "--file", forged], { OCR_WEBHOOK_SECRET: VECTOR.secret })).code).toBe(3);
      // Two signatures (a rotation): the right one anywhere in the list verifies.
      const rotated = save("rotated.json", {
        headers: {
          "webhook-id": VECTOR.id,
          "webhook-timestamp": VECTOR.timestamp,
          "webhook-signature": `${new Webhook(newSigningSecret()).sign(VECTOR.id, new Date(Number(VECTOR.timestamp) * 1000), VECTOR.body)} ${VECTOR.signature}`,
        },
        body: VECTOR.body,
      });
      expect((await ocr(["webhooks", "verify", "--file", rotated], { OCR_WEBHOOK_SECRET: VECTOR.secret })).code).toBe(
        0,
      );
    });

    it("usage and input errors: no secret (2), no delivery (2), not a delivery (5), a missing header (5)", async () => {
      const file = save("saved2.json", { headers: delivery.headers, body: delivery.body });
      const noSecret = await ocr(["webhooks", "verify", "--file", file]);
      expect(noSecret.code).toBe(2);
      expect(noSecret.stderr).toContain("OCR_WEBHOOK_SECRET");
      expect((await ocr(["webhooks", "verify"], env())).code).toBe(2);
      expect((await ocr(["webhooks", "send"], env())).code).toBe(2);
      const notDelivery = await ocr(["webhooks", "verify", "--file", save("nope.json", "[1, 2]")], env());
      expect(notDelivery.code).toBe(5);
      const { ["webhook-id"]: _id, ...rest } = delivery.headers;
      const noId = await ocr(
        ["webhooks", "verify", "--file", save("noid.json", { headers: rest, body: delivery.body })],
        env(),
      );
      expect(noId.code).toBe(5);
      expect(noId.stderr).toContain("no webhook-id header");
      const help = await ocr(["webhooks", "--help"]);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain("ocr webhooks verify --secret");
    });
  });
});
