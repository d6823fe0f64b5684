import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";

/** Documents the bench reads: images and PDFs. */
const DOCUMENT_EXTENSIONS = new Set([".pdf", ".png", ".jpg", ".jpeg", ".webp"]);

interface CorpusFile {
  file: string;
  /** Lower-case extension with its dot. */
  ext: string;
  /** `<name>.gt.txt` beside it: the ground truth. */
  truthFile: string;
  size: number;
}

/**
 * Every document below `targets` (files or folders, walked in name order) that has a `<name>.gt.txt` beside it and
 * whose path contains `filter` when one is given.
 */
export async function findCorpusFiles(targets: string[], filter?: string): Promise<CorpusFile[]> {
  const found: CorpusFile[] = [];
  const visit = async (target: string): Promise<void> => {
    const stat = await fs.stat(target);
    if (stat.isDirectory()) {
      for (const entry of (await fs.readdir(target)).sort()) await visit(path.join(target, entry));
      return;
    }
    const ext = path.extname(target).toLowerCase();
    if (!DOCUMENT_EXTENSIONS.has(ext)) return;
    const truthFile = target.slice(0, -ext.length) + ".gt.txt";
    if (!existsSync(truthFile) || (filter && !target.includes(filter))) return;
    found.push({ file: target, ext, truthFile, size: stat.size });
  };
  for (const target of targets) await visit(target);
  return found;
}
