/** CTC greedy decoding with character positions, and the clean-up of what a Chinese-trained model writes. */

export interface DecodedChar {
  text: string;
  /** Highest probability of the character on its frames, 0–1. */
  prob: number;
  /** First and last frame (inclusive) the character occupies. */
  first: number;
  last: number;
  /** Highest probability of the space class on the frames between the previous character and this one. */
  spaceBefore: number;
}

/**
 * Greedy CTC over `frames`×`classes` probabilities at `offset`: argmax per frame, repeats collapsed, blanks (class
 * 0) dropped; class `i ≥ 1` is `dictionary[i - 1]`. The space class is not emitted as a character: what it scored
 * between two characters is kept in `spaceBefore`, for the caller to split words on.
 */
export function decodeCtc(
  probs: Float32Array,
  offset: number,
  frames: number,
  classes: number,
  dictionary: readonly string[],
  spaceClass: number,
): DecodedChar[] {
  const out: DecodedChar[] = [];
  let prev = 0;
  let space = 0;
  for (let t = 0; t < frames; t++) {
    const base = offset + t * classes;
    let best = 0;
    let bestP = probs[base]!;
    for (let c = 1; c < classes; c++) {
      const p = probs[base + c]!;
      if (p > bestP) {
        bestP = p;
        best = c;
      }
    }
    if (best !== 0 && best !== spaceClass) {
      if (best === prev) {
        const last = out[out.length - 1]!;
        last.last = t;
        if (bestP > last.prob) last.prob = bestP;
      } else {
        out.push({ text: dictionary[best - 1] ?? "", prob: bestP, first: t, last: t, spaceBefore: space });
      }
      space = 0;
    } else {
      const p = probs[base + spaceClass]!;
      if (p > space) space = p;
    }
    prev = best;
  }
  return out;
}

/**
 * Map the Chinese recognizer's output onto Latin text: NFKC folds full-width letters, digits and punctuation
 * (（ → (, ： → :), typographic quotes and dashes become ASCII, ideographic comma and full stop become , and .;
 * other CJK punctuation and any character outside Latin, Greek, digits, punctuation and symbols (CJK) is dropped.
 */
export function latinize(text: string): string {
  return text
    .normalize("NFKC")
    .replace(/[‘’‚‛]/gu, "'")
    .replace(/[“”„‟]/gu, '"')
    .replace(/[‐‑‒–—―]/gu, "-")
    .replace(/、/gu, ",")
    .replace(/。/gu, ".")
    .replace(/[\u3000-\u303f\u30fb\uff5f-\uff65]/gu, "")
    .replace(/[^\p{Script=Latin}\p{Script=Greek}\p{Nd}\p{P}\p{S}]/gu, "");
}
