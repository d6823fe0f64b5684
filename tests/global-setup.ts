import { execFileSync } from "node:child_process";
import path from "node:path";
import { generateFixtures } from "../scripts/make-fixtures";

/**
 * Runs once per `vitest run`: writes the generated fixtures (text rendered with a committed font, PDFs built with
 * pdf-lib, hostile files) under tests/.generated/ (cheap when they are already there), and builds the OCR engine
 * bundle the engine processes run (build/engine/ocr-worker.mjs, ~0.2 s), so tests always run the current source.
 */
export default async function setup(): Promise<void> {
  execFileSync(process.execPath, [path.join(import.meta.dirname, "../scripts/build-engine.mjs")], { stdio: "inherit" });
  await generateFixtures();
}
