import { createCanvas } from "@napi-rs/canvas";
import { PDFDocument } from "pdf-lib";

/**
 * A scanned PDF of about `megabytes` MB: pages of 2480×3508 (A4 at 300 DPI) JPEGs whose grain does not compress,
 * each with a line of text — what a big scanned contract by URL looks like to the service. For `bench --job
 * --source-mb N`.
 */
export async function bigScan(megabytes: number): Promise<Uint8Array> {
  const width = 2480;
  const height = 3508;
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext("2d");
  const image = ctx.createImageData(width, height);
  let seed = 12345;
  for (let i = 0; i < image.data.length; i += 4) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const grey = 200 + (seed % 56);
    image.data[i] = image.data[i + 1] = image.data[i + 2] = grey;
    image.data[i + 3] = 255;
  }
  const pdf = await PDFDocument.create();
  let total = 0;
  for (let page = 1; total < megabytes * 1024 * 1024; page++) {
    ctx.putImageData(image, 0, 0);
    ctx.fillStyle = "#111111";
    ctx.font = "72px sans-serif";
    ctx.fillText(`Contract page ${page}: the parties agree to the terms below.`, 150, 400);
    const jpeg = canvas.toBuffer("image/jpeg", 80);
    total += jpeg.byteLength;
    const embedded = await pdf.embedJpg(jpeg);
    pdf.addPage([595, 842]).drawImage(embedded, { x: 0, y: 0, width: 595, height: 842 });
  }
  return pdf.save();
}
