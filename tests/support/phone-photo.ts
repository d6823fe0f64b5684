import { createCanvas, loadImage } from "@napi-rs/canvas";
import { fixture } from "../api/support";

/**
 * The paragraph fixture drawn 1.4× onto a 2560×1920 sheet of grainy paper (a 5-megapixel phone photo of a page), as a
 * JPEG at quality 97: 3.7 MB, the size of the photos that were refused.
 */
export async function phonePhoto(): Promise<Uint8Array<ArrayBuffer>> {
  const paragraph = await loadImage(fixture("paragraph.png"));
  const [width, height, noise] = [2560, 1920, 70];
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, width, height);
  ctx.drawImage(paragraph, (width - 2100) / 2, (height - 420) / 2, 2100, 420);
  const pixels = ctx.getImageData(0, 0, width, height);
  let seed = 7;
  for (let i = 0; i < pixels.data.length; i += 4) {
    for (let c = 0; c < 3; c++) {
      seed = (seed * 1664525 + 1013904223) >>> 0;
      const grain = ((seed >>> 24) / 255 - 0.5) * noise;
      pixels.data[i + c] = Math.max(0, Math.min(255, pixels.data[i + c]! * 0.9 + 10 + grain));
    }
  }
  ctx.putImageData(pixels, 0, 0);
  return new Uint8Array(canvas.toBuffer("image/jpeg", 97));
}
