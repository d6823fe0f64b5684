import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";

/*
 * What the browser tests (tests/browser/) share: Chromium, where screenshots go, and the steps every one of them
 * takes on the settings page.
 */

/** Debian's chromium package (CI's .ci/run installs it). */
export const CHROMIUM = "/usr/bin/chromium";
/** Screenshots, for a person to look at (not compared). */
export const ARTIFACTS = path.resolve(import.meta.dirname, "../artifacts");
/** A password the sign-up form accepts. */
export const TEST_PASSWORD = "a long enough password";

/** Headless Chromium, with a clear error when it is not installed; the screenshot folder made. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium is missing at ${CHROMIUM}: install Debian's chromium package (CI's .ci/run does).`);
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
}

/** How far the page is wider than its viewport (0 or less: no horizontal scrolling). */
export const overflowOf = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

/** Sign up on the sign-in page's form with `email`, and wait for the settings page it leads to. */
export async function signUp(page: Page, baseUrl: string, email: string): Promise<void> {
  await page.goto(`${baseUrl}/signin?mode=signup`);
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill(TEST_PASSWORD);
  await page.getByRole("button", { name: "Create account" }).click();
  await page.waitForURL(`${baseUrl}/settings`);
}

/** Create an API key named `name` on the settings page; the key it shows (once). */
export async function createKeyOnPage(page: Page, name: string): Promise<string> {
  await page.getByLabel("Key name").fill(name);
  await page.getByRole("button", { name: "Create key" }).click();
  const keyField = page.getByLabel("Your new API key");
  await keyField.waitFor();
  return keyField.inputValue();
}

/**
 * Resolves once React has hydrated every form field of the page. A screenshot hides the text caret by setting a style
 * on each field; taken before hydration (a slow development server), React reports the attribute as a mismatch.
 */
export async function waitForHydration(page: Page): Promise<void> {
  await page.waitForFunction(() =>
    // The hidden `$ACTION_…` fields React renders for a server action on the server are not hydrated (not in its tree).
    Array.from(document.querySelectorAll('input:not([name^="$ACTION"]), textarea, select')).every((field) =>
      Object.keys(field).some((name) => name.startsWith("__reactFiber$")),
    ),
  );
}
