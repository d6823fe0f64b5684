import { PDFDocument } from "pdf-lib";
import { z } from "zod";
import { degradedPrint } from "../support/ocr";

/** What the viewer tests read: a 3-page scan, page 1 a poor print (words of low confidence), pages 2–3 clean. */
export const VIEWER_PAGES = [
  ["RECEIPT 0042 CORNER SHOP", "Bread 2.40 Milk 1.15", "TOTAL 3.55 EUR CARD"],
  ["Page two of the viewer test", "Clean print reads well"],
  ["Page three closes it", "Nothing more to read"],
];

export async function viewerDocument(): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  for (const [index, lines] of VIEWER_PAGES.entries()) {
    const jpeg =
      index === 0
        ? degradedPrint(lines, { px: 18, shrink: 0.55 })
        : degradedPrint(lines, { px: 22, shrink: 1, noise: 0, ink: 0x10, paper: 0xff, quality: 90 });
    const image = await pdf.embedJpg(jpeg);
    const page = pdf.addPage([image.width * 0.75, image.height * 0.75]);
    page.drawImage(image, { x: 0, y: 0, width: page.getWidth(), height: page.getHeight() });
  }
  return pdf.save();
}

const wordSchema = z.object({
  text: z.string(),
  confidence: z.number(),
  bbox: z.tuple([z.number(), z.number(), z.number(), z.number()]),
  review: z.literal(true).optional(),
  alternative: z.string().optional(),
});
export const viewerPageSchema = z.looseObject({
  jobId: z.string(),
  page: z.number(),
  index: z.number(),
  count: z.number(),
  previousPage: z.number().optional(),
  nextPage: z.number().optional(),
  pageStatus: z.enum(["done", "pending", "failed"]),
  content: z
    .looseObject({
      number: z.number(),
      engine: z.enum(["tesseract", "paddle"]).optional(),
      blocks: z.array(z.looseObject({ lines: z.array(z.looseObject({ words: z.array(wordSchema) })) })),
    })
    .optional(),
  image: z.object({ mimeType: z.string(), width: z.number(), height: z.number() }).optional(),
  imageError: z.string().optional(),
});
export type ViewerPage = z.infer<typeof viewerPageSchema>;

export function wordsOf(page: ViewerPage) {
  return (page.content?.blocks ?? []).flatMap((block) => block.lines.flatMap((line) => line.words));
}
