// scripts/serve.mjs sets the same key, from its `--settings` argument, in the server's process.
const KEY = Symbol.for("ocr-service.settings-overrides");

/** Overrides by section (`SettingsOverrides` of ./index.ts; kept untyped here so this leaf imports nothing). */
type Installed = Partial<Record<string, object>>;
type Holder = { [KEY]?: Installed };

/**
 * Set this process's overrides of the modules' settings, once, from its `main` (scripts/worker.ts, scripts/serve.mjs
 * and the test instance: their `--settings` argument, and `--name`). Kept on globalThis like the store (a dev-server
 * reload keeps them). Typed by `installProcessSettings` (./index.ts).
 */
export function installOverrides(overrides: Installed): void {
  (globalThis as Holder)[KEY] = overrides;
}

/**
 * The overrides of one section this process's `main` installed (none in a server started plainly: its settings are
 * the constants). Read where the process's settings are built — `processSettings` for the entry points, and the
 * builders of process-wide singletons (the engine pool, the work and delivery queues) — as `getEnv()` is; nowhere
 * else. A leaf: the modules whose singletons read it are below lib/settings.
 */
export function installedOverrides<T extends object>(section: string): Partial<T> {
  return ((globalThis as Holder)[KEY]?.[section] ?? {}) as Partial<T>;
}
