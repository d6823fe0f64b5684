import { readFileSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { ARTIFACTS, launchChromium, overflowOf, signUp, waitForHydration } from "../support/browser";
import { startDevServer, warmRoutes, type DevServer } from "../support/dev-server";
import { getStore } from "@/lib/store";
import { webhookSettings } from "@/lib/webhooks";
import { TEST_REDIS_URL, withRedisStoreEnv } from "../support/redis";
import { startWebhookReceiver, waitFor, type WebhookReceiver } from "../support/webhook-receiver";

/*
 * The settings page's Webhooks section in headless Chromium, on the development server with Redis (BullMQ) and its
 * background runner (which also delivers webhook events): a user creates the signing secret (shown once), sets a
 * default URL on a receiver of the test's own (allow-listed: it is on 127.0.0.1), sends a test event and sees it in
 * the delivery log, rotates the secret (both sign for 24 h), and a job sent with the key announces its end there too.
 * At 1280 px and at 390 px, without horizontal scrolling.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");

const { prefix } = withRedisStoreEnv("browser-webhooks");

let server: DevServer | undefined;
let baseUrl = "";
let browser: Browser | undefined;
let receiver: WebhookReceiver;

const logRows = (page: Page) => page.locator("tr[data-event-id]");

describe("the settings page's webhooks", () => {
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    await Promise.all([
      startDevServer(
        {
          REDIS_URL: TEST_REDIS_URL,
          REDIS_PREFIX: prefix,
          OCR_ENGINE_PROCESSES: "1",
          LOG_REQUESTS: "false",
          URL_ALLOW_HOSTS: "127.0.0.1",
        },
        "/signin",
        ["--settings", JSON.stringify({ webhooks: { retryBaseMs: 500 } })],
      ).then((started) => {
        server = started;
        baseUrl = started.baseUrl;
      }),
      launchChromium().then((launched) => {
        browser = launched;
      }),
    ]);
    await warmRoutes(baseUrl, [
      ["GET", "/settings"],
      ["POST", "/api/ocr/jobs"],
    ]);
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await receiver?.close();
  });

  it("creates and rotates the signing secret, sends a test event, lists deliveries; fits 1280 and 390 px", async () => {
    if (!browser) throw new Error("browser not started");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(60_000);
    const problems: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));

    const email = `webhooks-${Date.now()}@example.com`;
    await signUp(page, baseUrl, email);
    const section = page.locator("#webhooks");
    expect(await section.getByTestId("deliveries-empty").textContent()).toBe("No deliveries yet.");
    expect(await section.getByRole("button", { name: "Send a test event" }).isDisabled()).toBe(true);

    // The secret, shown once.
    await section.getByRole("button", { name: "Create signing secret" }).click();
    const first = await section.getByLabel("Your new webhook signing secret").inputValue();
    expect(first).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    receiver.secret = first;
    await expect
      .poll(() => section.getByTestId("webhook-secret").textContent(), { timeout: 60_000 })
      .toContain(first.slice(0, 12));

    // A URL the guard refuses, then the receiver's.
    await section.getByLabel("Default webhook URL").fill("https://10.0.0.1/hook");
    await section.getByRole("button", { name: "Save URL" }).click();
    await expect
      .poll(() => section.getByRole("alert").textContent(), { timeout: 60_000 })
      .toMatch(/not a public address/);
    await section.getByLabel("Default webhook URL").fill(receiver.url);
    await section.getByRole("button", { name: "Save URL" }).click();
    await section.getByText("Saved:").waitFor();

    // A test event: delivered, verified by the receiver with the secret, in the log.
    await section.getByRole("button", { name: "Send a test event" }).click();
    await expect
      .poll(() => section.getByTestId("test-event-result").textContent(), { timeout: 60_000 })
      .toMatch(/^Delivered: your receiver answered 200/);
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.refused).toBeUndefined();
    expect(receiver.received[0]!.event).toMatchObject({ type: "webhook.test" });
    await expect.poll(() => logRows(page).count(), { timeout: 60_000 }).toBe(1);
    expect(await logRows(page).first().getAttribute("data-event-type")).toBe("webhook.test");
    expect(await logRows(page).first().getByTestId("delivery-result").textContent()).toContain("HTTP 200");

    // Rotate: a new secret; the old one still signs (both signatures), so the receiver with the old one verifies.
    await section.getByRole("button", { name: "Rotate secret" }).click();
    await expect
      .poll(() => section.getByLabel("Your new webhook signing secret").inputValue(), { timeout: 60_000 })
      .not.toBe(first);
    const second = await section.getByLabel("Your new webhook signing secret").inputValue();
    expect(second).toMatch(/^whsec_/);
    await expect
      .poll(() => section.getByTestId("webhook-secret").textContent(), { timeout: 60_000 })
      .toContain("the previous one signs too until");
    await section.getByRole("button", { name: "Send a test event" }).click();
    await expect.poll(() => receiver.received.length, { timeout: 60_000 }).toBe(2);
    const rotated = receiver.received[1]!;
    expect(rotated.refused).toBeUndefined();
    expect(rotated.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(() => new Webhook(second).verify(rotated.body, rotated.headers)).not.toThrow();
    await expect.poll(() => logRows(page).count(), { timeout: 60_000 }).toBe(2);

    // A receiver that fails: the log says so.
    receiver.script = [500];
    await section.getByRole("button", { name: "Send a test event" }).click();
    await expect
      .poll(() => section.getByTestId("test-event-result").textContent(), { timeout: 60_000 })
      .toMatch(/Not delivered: The receiver answered HTTP 500/);
    await expect.poll(() => logRows(page).count(), { timeout: 60_000 }).toBe(3);
    expect(await logRows(page).first().getAttribute("data-ok")).toBe("false");

    // A job sent with a key announces its end to the default URL, delivered by the server's own worker.
    await page.getByLabel("Key name").fill("webhooks");
    await page.getByRole("button", { name: "Create key" }).click();
    const key = await page.getByLabel("Your new API key").inputValue();
    receiver.secret = second;
    const response = await fetch(`${baseUrl}/api/ocr/jobs`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({
        image: readFileSync(path.join(ROOT, "tests/.generated/paragraph.png")).toString("base64"),
      }),
    });
    const job = (await response.json()) as { jobId: string };
    expect(response.status, JSON.stringify(job)).toBe(202);
    const delivery = await waitFor(
      () => receiver.received.find((item) => (item.event as { data?: { id?: string } } | null)?.data?.id === job.jobId),
      180_000,
      "the job's event",
    );
    expect(delivery.event).toMatchObject({ type: "job.succeeded", data: { status: "succeeded" } });
    expect((delivery.event as { data: { resultUrl: string } }).data.resultUrl).toMatch(
      new RegExp(`^http://[^/]+/api/ocr/jobs/${job.jobId}/result$`),
    );
    await page.reload();
    await expect.poll(() => page.locator(`tr[data-event-type="job.succeeded"]`).count(), { timeout: 60_000 }).toBe(1);
    // Shown once: after a reload the page holds only the secret's first characters.
    expect(await section.getByLabel("Your new webhook signing secret").count()).toBe(0);
    expect(await page.content()).not.toContain(second.slice(12));
    expect(await section.getByTestId("webhook-secret").textContent()).toContain(second.slice(0, 12));
    expect(await page.locator(`tr[data-job-id="${job.jobId}"]`).getAttribute("data-status")).toBe("succeeded");

    // A receiver that failed every delivery for 5 days is disabled: the page says since when, and re-enables it.
    const userId = (await getStore().accounts.getUserIdByEmail(email))!;
    const origin = new URL(receiver.url).origin;
    for (let i = 0; i < 6; i++) {
      await getStore().webhooks.recordEndpointFailure(userId, {
        receiver: origin,
        url: receiver.url,
        error: "The receiver answered HTTP 503",
        now: Date.now() - (i < 5 ? webhookSettings().breaker.disableAfterMs + 60_000 : 0),
        policy: { ...webhookSettings().breaker, jitter: 1 },
      });
    }
    await page.reload();
    const failing = section.locator(`li[data-receiver="${origin}"]`);
    expect(await failing.getAttribute("data-state")).toBe("disabled");
    expect(await failing.textContent()).toMatch(/disabled on .* UTC: its events are not sent/);
    expect(await failing.textContent()).toContain("The receiver answered HTTP 503");
    expect(await overflowOf(page), "horizontal overflow at 1280 px, a receiver disabled").toBeLessThanOrEqual(0);
    await failing.getByRole("button", { name: "Re-enable" }).click();
    await expect.poll(() => section.getByTestId("webhook-receivers").count(), { timeout: 60_000 }).toBe(0);
    expect(await getStore().webhooks.getEndpoint(userId, origin)).toBeNull();
    expect(await overflowOf(page), "horizontal overflow at 1280 px").toBeLessThanOrEqual(0);
    await section.screenshot({ path: path.join(ARTIFACTS, "settings-webhooks.png") });

    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    await logRows(page).first().waitFor();
    expect(await overflowOf(page), "horizontal overflow at 390 px").toBeLessThanOrEqual(0);
    await waitForHydration(page);
    await section.screenshot({ path: path.join(ARTIFACTS, "settings-webhooks-phone.png") });
    expect(problems, "errors in the page's console").toEqual([]);
    await context.close();
  }, 420_000);
});
