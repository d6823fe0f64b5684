import { deflateRawSync, inflateRawSync } from "node:zlib";
import { z } from "zod";
import type { ExtractedPage, LanguageChoice } from "@/lib/ocr/model";

/**
 * A page's result as the job store keeps it: the page model (what every format is rendered from), the languages it
 * was read in, and which process read it — JSON, deflated (a dense page's words with boxes compress ~6×), base64 so
 * it travels as a string over Upstash's REST API too.
 */
export interface StoredPage {
  page: ExtractedPage;
  language: LanguageChoice;
  /** The process that read it (`npm run worker -- --name`, or a name made of its host and pid). */
  readBy: string;
  /** Milliseconds its reading took in the engine. */
  ms: number;
}

const storedPageSchema = z.object({
  page: z.looseObject({ number: z.number().int(), text: z.string(), blocks: z.array(z.unknown()) }),
  language: z.object({ langs: z.array(z.string()), auto: z.boolean() }),
  readBy: z.string(),
  ms: z.number(),
});

export function encodePage(stored: StoredPage): string {
  return deflateRawSync(Buffer.from(JSON.stringify(stored))).toString("base64");
}

/** The store is a trust boundary: the envelope is checked; the page inside was written by this codebase's engine. */
export function decodePage(payload: string): StoredPage {
  const parsed = storedPageSchema.parse(JSON.parse(inflateRawSync(Buffer.from(payload, "base64")).toString("utf8")));
  return parsed as unknown as StoredPage;
}
