import path from "node:path";
import { PDFDocument } from "pdf-lib";
import type { Browser, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getAccountByEmail } from "@/lib/accounts";
import { getBalance } from "@/lib/credits";
import { getJobView } from "@/lib/jobs";
import { getStore } from "@/lib/store";
import { longScan } from "@/scripts/make-fixtures";
import { ARTIFACTS, createKeyOnPage, launchChromium, overflowOf, signUp, waitForHydration } from "../support/browser";
import { startDevServer, warmRoutes, type DevServer } from "../support/dev-server";
import { TEST_REDIS_URL, withRedisStoreEnv } from "../support/redis";
import { getEnv } from "@/lib/env";
import { services } from "@/lib/services";

/*
 * The settings page's Jobs section in headless Chromium, on the development server with Redis (BullMQ) and one engine
 * process reading the jobs' pages in the background: a user signs up, creates a key, sends two generated scans as
 * jobs with it, watches them on the page (it refreshes itself while one runs), downloads a result under the session,
 * cancels the long one while it runs, and the credits shown add up. The test's own store shares the server's Redis
 * prefix, to check the page against the account's jobs and balance.
 */

const FREE_CREDITS = 100;
const SHORT_PAGES = 3;
/** Long enough to be still running when it is cancelled (one engine process reads it). */
const LONG_PAGES = 60;

const { prefix } = withRedisStoreEnv("browser-jobs");

let server: DevServer | undefined;
let baseUrl = "";
let browser: Browser | undefined;
let short: { pdf: Uint8Array; truth: string[] };
let long: { pdf: Uint8Array; truth: string[] };

/** The outermost elements reaching past the viewport's right edge outside a scrolling box (for the failure message). */
const overflowingElements = (page: Page) =>
  page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const scrolls = (element: Element | null): boolean =>
      element !== null &&
      element !== document.body &&
      (["auto", "scroll"].includes(getComputedStyle(element).overflowX) || scrolls(element.parentElement));
    // An absolutely positioned element escapes a scrolling box that is not positioned itself.
    const wide = [...document.body.querySelectorAll("*")].filter(
      (element) =>
        element.getBoundingClientRect().right > width + 0.5 &&
        (getComputedStyle(element).position === "absolute" || !scrolls(element.parentElement)),
    );
    return wide
      .filter((element) => !wide.includes(element.parentElement!))
      .map(
        (element) =>
          `<${element.tagName.toLowerCase()} class="${element.className}"> ${(element.textContent ?? "").slice(0, 40)} (${Math.round(element.getBoundingClientRect().right)} px)`,
      )
      .join(", ");
  });

/** How far the jobs table reaches past its scrolling wrapper (px; 0 or less: it fits). */
const tableOverflow = (page: Page) =>
  page.locator(".table-wrap:has(.jobs-table)").evaluate((wrap) => wrap.scrollWidth - wrap.clientWidth);

const row = (page: Page, jobId: string) => page.locator(`tr[data-job-id="${jobId}"]`);
const credits = async (jobRow: Locator) =>
  Object.fromEntries(
    await jobRow
      .locator("[data-credits]")
      .evaluateAll((nodes) =>
        nodes.map((node) => [node.getAttribute("data-credits"), Number.parseInt(node.textContent ?? "", 10)]),
      ),
  ) as Record<string, number>;
const pagesRead = async (jobRow: Locator) =>
  Number(/(\d+)\/\d+ read/.exec((await jobRow.getByTestId("job-pages").textContent()) ?? "")?.[1] ?? -1);

describe("the settings page's jobs", () => {
  beforeAll(async () => {
    await Promise.all([
      startDevServer({
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: prefix,
        FREE_CREDITS: String(FREE_CREDITS),
        OCR_ENGINE_PROCESSES: "1",
        LOG_REQUESTS: "false",
      }).then((started) => {
        server = started;
        baseUrl = started.baseUrl;
      }),
      launchChromium().then((launched) => {
        browser = launched;
      }),
      Promise.all([longScan(SHORT_PAGES), longScan(LONG_PAGES)]).then(([a, b]) => {
        short = a;
        long = b;
      }),
    ]);
    await warmRoutes(baseUrl, [
      ["GET", "/settings"],
      ["GET", "/settings/jobs/job_AAAAAAAAAAAAAAAAAAAAAA/result"],
      ["POST", "/api/ocr/jobs"],
      ["GET", "/api/ocr/jobs/job_AAAAAAAAAAAAAAAAAAAAAA"],
    ]);
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function submit(key: string, pdf: Uint8Array): Promise<string> {
    const response = await fetch(`${baseUrl}/api/ocr/jobs`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ image: Buffer.from(pdf).toString("base64") }),
    });
    const body = (await response.json()) as { jobId: string };
    expect(response.status, JSON.stringify(body)).toBe(202);
    return body.jobId;
  }

  it("lists the account's jobs with their progress and credits, downloads a result, cancels a running job; fits 1280 and 390 px", async () => {
    if (!browser) throw new Error("browser not started");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(60_000);
    const email = `jobs-${Date.now()}@example.com`;

    await signUp(page, baseUrl, email);
    expect(await page.getByTestId("jobs-empty").textContent()).toBe("No jobs yet.");
    const key = await createKeyOnPage(page, "jobs");
    const account = await getAccountByEmail(getStore(), email);
    if (!account) throw new Error("the account was not made");

    const shortJob = await submit(key, short.pdf);
    const longJob = await submit(key, long.pdf);
    // Both reserved at once: the page's balance says so once it is fetched again.
    expect(await getBalance(getStore(), account.id)).toBe(FREE_CREDITS - SHORT_PAGES - LONG_PAGES);

    // The page refreshes itself while a job runs: no reload from here on. Newest first.
    await page.reload();
    await expect
      .poll(
        () => page.locator("tr[data-job-id]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-job-id"))),
        { timeout: 30_000 },
      )
      .toEqual([longJob, shortJob]);
    const shortRow = row(page, shortJob);
    const longRow = row(page, longJob);
    await expect.poll(() => shortRow.getAttribute("data-status"), { timeout: 120_000 }).toBe("succeeded");
    expect(await shortRow.getByTestId("job-pages").textContent()).toContain(`${SHORT_PAGES}/${SHORT_PAGES} read`);
    expect(await credits(shortRow)).toEqual({ used: SHORT_PAGES, reserved: SHORT_PAGES, refunded: 0 });
    expect(await shortRow.getByText("Cancel", { exact: true }).count()).toBe(0);

    // Its result, downloaded under the session (a link: the API's route would need the key in a header).
    const href = await shortRow.getByRole("link", { name: "Result", exact: true }).getAttribute("href");
    expect(href).toBe(`/settings/jobs/${shortJob}/result`);
    const download = await page.request.get(`${baseUrl}${href}`);
    expect(download.status()).toBe(200);
    expect(download.headers()["content-disposition"]).toBe(`attachment; filename="${shortJob}.txt"`);
    const pages = (await download.text()).trimEnd().split("\f");
    expect(pages).toHaveLength(SHORT_PAGES);
    for (const [i, text] of pages.entries()) expect(text).toContain(`Page ${i + 1} of ${SHORT_PAGES}`);
    const json = await page.request.get(`${baseUrl}/settings/jobs/${shortJob}/result?format=json`);
    expect(((await json.json()) as { pages: unknown[] }).pages).toHaveLength(SHORT_PAGES);
    // The searchable PDF and hOCR, from the row's own links, under the session too.
    const pdfHref = await shortRow
      .getByRole("link", { name: `Result of ${shortJob} as a searchable PDF` })
      .getAttribute("href");
    expect(pdfHref).toBe(`/settings/jobs/${shortJob}/result?format=pdf`);
    const pdf = await page.request.get(`${baseUrl}${pdfHref}`);
    expect(pdf.status()).toBe(200);
    expect(pdf.headers()["content-type"]).toBe("application/pdf");
    expect(pdf.headers()["content-disposition"]).toBe(`attachment; filename="${shortJob}.pdf"`);
    const pdfBytes = await pdf.body();
    expect(pdfBytes.subarray(0, 5).toString("latin1")).toBe("%PDF-");
    expect((await PDFDocument.load(pdfBytes)).getPageCount()).toBe(SHORT_PAGES);
    const hocrHref = await shortRow.getByRole("link", { name: `Result of ${shortJob} as hOCR` }).getAttribute("href");
    expect(hocrHref).toBe(`/settings/jobs/${shortJob}/result?format=hocr`);
    const hocr = await page.request.get(`${baseUrl}${hocrHref}`);
    expect(hocr.status()).toBe(200);
    expect(hocr.headers()["content-disposition"]).toBe(`attachment; filename="${shortJob}.hocr"`);
    const hocrText = await hocr.text();
    expect(hocrText.match(/class="ocr_page"/g)).toHaveLength(SHORT_PAGES);
    expect(hocrText.replace(/<[^>]+>/g, "")).toContain(`Page 1 of ${SHORT_PAGES}`);
    expect((await fetch(`${baseUrl}${pdfHref}`)).status).toBe(401);
    // Not without the session, and not another account's job.
    expect((await fetch(`${baseUrl}${href}`)).status).toBe(401);

    // The long one is seen progressing, then cancelled from the page while it runs.
    await expect.poll(() => longRow.getAttribute("data-status"), { timeout: 120_000 }).toBe("running");
    await expect.poll(() => pagesRead(longRow), { timeout: 120_000 }).toBeGreaterThan(0);
    const seen = await pagesRead(longRow);
    await expect.poll(() => pagesRead(longRow), { timeout: 120_000 }).toBeGreaterThan(seen);
    expect(
      await overflowOf(page),
      `horizontal overflow at 1280 px with a running job: ${await overflowingElements(page)}`,
    ).toBeLessThanOrEqual(0);
    // The table scrolls inside its card rather than overflow the page; at a laptop's width it fits whole (issue 29).
    expect(await tableOverflow(page), "the jobs table is wider than its card at 1280 px").toBeLessThanOrEqual(0);
    await page.screenshot({ path: path.join(ARTIFACTS, "settings-jobs.png"), fullPage: true });
    await longRow.getByText("Cancel", { exact: true }).click();
    await longRow.getByRole("button", { name: "Cancel job" }).click();
    await expect.poll(() => longRow.getAttribute("data-status"), { timeout: 60_000 }).toBe("cancelled");

    const view = await getJobView(getStore(), getEnv(), services().deliveries, account.id, longJob);
    expect(view).toMatchObject({ status: "cancelled", pagesTotal: LONG_PAGES });
    expect(view.pagesDone).toBeGreaterThan(0);
    expect(view.pagesDone).toBeLessThan(LONG_PAGES);
    expect(view.creditsRefunded).toBe(LONG_PAGES - view.pagesDone);
    expect(await pagesRead(longRow)).toBe(view.pagesDone);
    expect(await credits(longRow)).toEqual({
      used: view.pagesDone,
      reserved: LONG_PAGES,
      refunded: LONG_PAGES - view.pagesDone,
    });
    expect(await longRow.getByText("Cancel", { exact: true }).count()).toBe(0);
    const balance = FREE_CREDITS - SHORT_PAGES - view.pagesDone;
    expect(await getBalance(getStore(), account.id)).toBe(balance);
    await expect.poll(() => page.getByTestId("balance").textContent(), { timeout: 30_000 }).toBe(String(balance));
    // The pages read before the cancel stay readable.
    const soFar = await page.request.get(`${baseUrl}/settings/jobs/${longJob}/result`);
    expect((await soFar.text()).trimEnd().split("\f")).toHaveLength(view.pagesDone);

    // A synchronous read is a job too (issue 41): listed, newest first, ended with its answer and charged what it
    // delivered, with no Cancel button; the page's text says the list holds the reads.
    const read = await fetch(`${baseUrl}/api/ocr/process`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/pdf" },
      body: new Uint8Array(short.pdf),
    });
    expect(read.status).toBe(200);
    expect(((await read.json()) as { creditsUsed: number }).creditsUsed).toBe(SHORT_PAGES);
    await page.reload();
    await expect.poll(() => page.locator("tr[data-job-id]").count(), { timeout: 30_000 }).toBe(3);
    const readRow = page.locator("tr[data-job-id]").first();
    const readJob = await readRow.getAttribute("data-job-id");
    expect([shortJob, longJob]).not.toContain(readJob);
    expect(await readRow.getAttribute("data-status")).toBe("succeeded");
    expect(await readRow.getByTestId("job-pages").textContent()).toContain(`${SHORT_PAGES}/${SHORT_PAGES} read`);
    expect(await credits(readRow)).toEqual({ used: SHORT_PAGES, reserved: SHORT_PAGES, refunded: 0 });
    expect(await readRow.getByText("Cancel", { exact: true }).count()).toBe(0);
    expect(await page.locator("#jobs-heading + p").textContent()).toContain("POST /api/ocr/process");
    await page.screenshot({ path: path.join(ARTIFACTS, "settings-jobs-with-read.png"), fullPage: true });

    // Another account sees none of it.
    const stranger = await browser.newContext();
    const other = await stranger.newPage();
    await signUp(other, baseUrl, `jobs-other-${Date.now()}@example.com`);
    expect(await other.getByTestId("jobs-empty").count()).toBe(1);
    expect((await other.request.get(`${baseUrl}/settings/jobs/${shortJob}/result`)).status()).toBe(404);
    await stranger.close();

    // A phone: the table scrolls in its own box, the page does not.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    await longRow.waitFor();
    await waitForHydration(page);
    await page.screenshot({ path: path.join(ARTIFACTS, "settings-jobs-phone.png"), fullPage: true });
    expect(
      await overflowOf(page),
      `horizontal overflow at 390 px with the jobs: ${await overflowingElements(page)}`,
    ).toBeLessThanOrEqual(0);
    await context.close();
  }, 420_000);
});
