import { z } from "zod";

/**
 * This process's overrides of the modules' settings (`jobSettings()`, `webhookSettings()`, `ocrSettings()`,
 * `fetchSettings()`, `keySettings()`, `accountSettings()`): the tuning values that are constants beside their code,
 * not environment variables (docs/configuration.md#which-variables-there-are-classification). A function that takes
 * a settings argument is given its values directly; this is for what is reached through a route handler (no `main`
 * to pass them down from) and for the processes a test starts (`npm run worker -- --settings '<json>'`). Tests set
 * short timings here, never through `process.env`. Kept on globalThis, like the store (dev-server reloads share it).
 */
const SECTIONS = ["jobs", "webhooks", "ocr", "fetch", "keys", "accounts"] as const;
export type SettingsSection = (typeof SECTIONS)[number];

const KEY = Symbol.for("ocr-service.settings-overrides");
type Holder = { [KEY]?: Partial<Record<SettingsSection, Record<string, unknown>>> };

function overrides(): Partial<Record<SettingsSection, Record<string, unknown>>> {
  const holder = globalThis as Holder;
  holder[KEY] ??= {};
  return holder[KEY];
}

/** The overrides of one section (empty when none are set). */
export function settingsOverrides<T extends object>(section: SettingsSection): Partial<T> {
  return (overrides()[section] ?? {}) as Partial<T>;
}

/** Override some settings of a section for this process; returns the function that puts the previous ones back. */
export function overrideSettings<T extends object>(section: SettingsSection, values: Partial<T>): () => void {
  const all = overrides();
  const previous = all[section];
  all[section] = { ...previous, ...values };
  return () => {
    if (previous === undefined) delete all[section];
    else all[section] = previous;
  };
}

/** `--settings '<json>'` of a process a test starts: known sections of plain values (numbers, strings, booleans). */
const overridesSchema = z.partialRecord(
  z.enum(SECTIONS),
  z.record(z.string(), z.union([z.number(), z.string(), z.boolean()])),
);

/** Parse and apply a `--settings` argument; throws a readable error naming what is wrong. */
export function applySettingsArgument(json: string): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new Error(`--settings is not JSON: ${json.slice(0, 80)}`);
  }
  const result = overridesSchema.safeParse(parsed);
  if (!result.success)
    throw new Error(`--settings: ${z.prettifyError(result.error)} (sections: ${SECTIONS.join(", ")})`);
  for (const section of SECTIONS) {
    const values = result.data[section];
    if (values) overrideSettings(section, values);
  }
}
