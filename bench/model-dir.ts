import { existsSync } from "node:fs";
import path from "node:path";

/**
 * PaddleOCR's recognizer directory the benchmarks read with: `OCR_MODEL_DIR` when set (empty: the npm PP-OCRv4
 * fallback), else the team's copy of PP-OCRv6 tiny at `../shared/models/ppocr-v6-tiny` when it is there.
 */
export function benchModelDir(): string | undefined {
  const set = process.env.OCR_MODEL_DIR;
  if (set !== undefined) return set || undefined;
  // bench/run.ts runs bundled elsewhere (bench/index.mjs): it is told the project's root.
  const root = process.env.OCR_BENCH_ROOT ?? path.resolve(import.meta.dirname, "..");
  const shared = path.resolve(root, "../shared/models/ppocr-v6-tiny");
  return existsSync(shared) ? shared : undefined;
}
