import { readFileSync } from "node:fs";
import path from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const ROOT = path.resolve(import.meta.dirname, "../..");
/** Seconds each test file took in a full run (`npm run test:durations` writes it from a run's JSON report). */
export const DURATIONS_FILE = path.join(ROOT, "tests/durations.json");
/** What a file missing from the durations file is taken to last: about a typical engine-tier file. */
const UNKNOWN_SECONDS = 20;

function knownDurations(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(DURATIONS_FILE, "utf8")) as Record<string, number>;
  } catch {
    return {};
  }
}

/**
 * The longest files first, across the four tiers (vitest's own order runs the projects one after the other and, on a
 * fresh clone without its results cache, orders files by size): two workers then finish together instead of one
 * running a 200 s browser file alone at the end. The durations come from a committed file rather than vitest's cache,
 * so CI — always a fresh clone — gets the same order as a developer's machine.
 */
export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const durations = knownDurations();
    const seconds = (spec: TestSpecification) =>
      durations[path.relative(ROOT, spec.moduleId).split(path.sep).join("/")] ?? UNKNOWN_SECONDS;
    return [...files].sort((a, b) => seconds(b) - seconds(a));
  }
}
