import { z } from "zod";
import { accountSettings, type AccountSettings } from "@/lib/accounts";
import type { Env } from "@/lib/env";
import { fetchSettings, type FetchSettings } from "@/lib/input";
import { jobSettings, type JobSettings } from "@/lib/jobs/settings";
import { keySettings, type KeySettings } from "@/lib/keys";
import { ocrSettings, type OcrSettings } from "@/lib/ocr/model";
import { webhookSettings, type WebhookSettings, type WebhookSettingsOverrides } from "@/lib/webhooks/settings";

/**
 * The modules' settings in one value: the tuning constants beside their code (docs/configuration.md, the
 * classification), with what the configuration derives them from. Built once where a process or a request starts —
 * `services()`, a route's wrapper (`withRequest`, `withApiKey`: the request's `context.settings`), a script's `main`
 * — and handed down as arguments: no module below reads a settings global. A test passes short timings as an
 * argument: to a domain function, to a route instance (`route.with({ settings })`, lib/http/routes.ts), or to a
 * process it starts (`--settings '<json>'`).
 */
export interface Settings {
  readonly jobs: JobSettings;
  readonly webhooks: WebhookSettings;
  readonly ocr: OcrSettings;
  readonly fetch: FetchSettings;
  readonly keys: KeySettings;
  readonly accounts: AccountSettings;
}

/** Overrides of some settings of some sections (each section's own `overrides` shape). */
export interface SettingsOverrides {
  jobs?: Partial<JobSettings>;
  webhooks?: WebhookSettingsOverrides;
  ocr?: Partial<OcrSettings>;
  fetch?: Partial<FetchSettings>;
  keys?: Partial<KeySettings>;
  accounts?: Partial<AccountSettings>;
}

/** The settings of the configuration `env`, with `overrides` on top. */
export function buildSettings(env: Env, overrides: SettingsOverrides = {}): Settings {
  return {
    jobs: jobSettings(overrides.jobs, env),
    webhooks: webhookSettings(overrides.webhooks),
    ocr: ocrSettings(overrides.ocr),
    fetch: fetchSettings(overrides.fetch),
    keys: keySettings(overrides.keys, env),
    accounts: accountSettings(overrides.accounts),
  };
}

/** Two sets of overrides, section by section, `later` winning (`webhooks.breaker` merged too). */
function mergeOverrides(earlier: SettingsOverrides, later: SettingsOverrides): SettingsOverrides {
  const breaker = { ...earlier.webhooks?.breaker, ...later.webhooks?.breaker };
  return {
    jobs: { ...earlier.jobs, ...later.jobs },
    webhooks: { ...earlier.webhooks, ...later.webhooks, breaker },
    ocr: { ...earlier.ocr, ...later.ocr },
    fetch: { ...earlier.fetch, ...later.fetch },
    keys: { ...earlier.keys, ...later.keys },
    accounts: { ...earlier.accounts, ...later.accounts },
  };
}

const SECTIONS = ["jobs", "webhooks", "ocr", "fetch", "keys", "accounts"] as const;

// scripts/serve.mjs sets the same key, from its `--settings` argument, in the server's process (Next.js loads the
// routes there: no `main` of ours hands them arguments).
const INSTALLED_KEY = Symbol.for("ocr-service.settings-overrides");
type InstalledHolder = { [INSTALLED_KEY]?: SettingsOverrides };

/**
 * Set this process's overrides, once, from its `main` (scripts/worker.ts and the test instance: their `--settings`
 * argument and `--name`; scripts/serve.mjs sets the same in the server's process). Read by `processSettings` only,
 * where lib/services.ts builds the process's services; nothing below reads them.
 */
export function installProcessSettings(overrides: SettingsOverrides): void {
  (globalThis as InstalledHolder)[INSTALLED_KEY] = { ...overrides };
}

/**
 * This process's settings for the configuration `env`: the constants, with the overrides its `main` installed and
 * then `overrides` (a route instance's, a test's). Built by lib/services.ts `services()` only — a route's wrapper,
 * a page, a script's `main` take theirs there — and handed down as arguments, with the engine pool and the queues
 * built from them.
 */
export function processSettings(env: Env, overrides: SettingsOverrides = {}): Settings {
  return buildSettings(env, mergeOverrides((globalThis as InstalledHolder)[INSTALLED_KEY] ?? {}, overrides));
}

/** `--settings '<json>'` of a process: known sections of plain values (numbers, strings, booleans). */
const overridesSchema = z.partialRecord(
  z.enum(SECTIONS),
  z.record(z.string(), z.union([z.number(), z.string(), z.boolean()])),
);

/** Parse a `--settings` argument; throws a readable error naming what is wrong. */
export function parseSettingsArgument(json: string): SettingsOverrides {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new Error(`--settings is not JSON: ${json.slice(0, 80)}`);
  }
  const result = overridesSchema.safeParse(parsed);
  if (!result.success)
    throw new Error(`--settings: ${z.prettifyError(result.error)} (sections: ${SECTIONS.join(", ")})`);
  return result.data as SettingsOverrides;
}
