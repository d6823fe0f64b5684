import { PDFDocument, StandardFonts } from "pdf-lib";

const WORDS =
  "the service reads scanned pages receipts forms and born digital documents and returns their text with layout confidence and bounding boxes for every word line and block while credits are charged per page read".split(
    " ",
  );

/** A born-digital PDF of `pages` Letter pages of justified-looking body text with a heading on each page. */
export async function makeTextPdf(pages: number, seed = 1): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold);
  let state = seed;
  const next = () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state;
  };
  for (let p = 0; p < pages; p++) {
    const page = pdf.addPage([612, 792]);
    page.drawText(`Chapter ${p + 1}: Reading documents`, { x: 72, y: 720, size: 18, font: bold });
    let y = 690;
    while (y > 72) {
      const line: string[] = [];
      while (line.join(" ").length < 85) line.push(WORDS[next() % WORDS.length]!);
      page.drawText(line.join(" "), { x: 72, y, size: 11, font });
      y -= 15;
    }
  }
  return pdf.save();
}

/** A PDF of `pages` pages made by repeating the pages of `source` (a real document's fonts and layout). */
export async function repeatPdf(source: Uint8Array, pages: number): Promise<Uint8Array> {
  const input = await PDFDocument.load(source);
  const output = await PDFDocument.create();
  const indices = input.getPageIndices();
  while (output.getPageCount() < pages) {
    const copied = await output.copyPages(input, indices.slice(0, pages - output.getPageCount()));
    for (const page of copied) output.addPage(page);
  }
  return output.save();
}
