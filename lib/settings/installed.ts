import type { SettingsOverrides } from "./index";

// scripts/serve.mjs sets the same key, from its `--settings` argument, in the server's process.
const KEY = Symbol.for("ocr-service.settings-overrides");
type Holder = { [KEY]?: SettingsOverrides };

/**
 * Set this process's overrides of the modules' settings, once, from its `main` (scripts/worker.ts, scripts/serve.mjs
 * and the test instance: their `--settings` argument, and `--name`). Kept on globalThis like the store (a dev-server
 * reload keeps them).
 */
export function installProcessSettings(overrides: SettingsOverrides): void {
  (globalThis as Holder)[KEY] = overrides;
}

/**
 * The overrides this process's `main` installed (none in a server started plainly: its settings are the constants).
 * Read where the process's settings are built — `processSettings` for the entry points, and the builders of
 * process-wide singletons (the engine pool, the delivery queue) — as `getEnv()` is; nowhere else.
 */
export function installedOverrides(): SettingsOverrides {
  return (globalThis as Holder)[KEY] ?? {};
}
