/** Accuracy measures for OCR output against ground truth. Used by the bench and by the tests. */

/** Collapse all whitespace (including form feeds between pages) to single spaces; optionally case-fold. */
export function normalizeText(text: string, caseFold = false): string {
  const collapsed = text.normalize("NFC").replace(/\s+/gu, " ").trim();
  return caseFold ? collapsed.toLowerCase() : collapsed;
}

/** Levenshtein distance over two sequences (characters or words), O(n·m) time, O(min(n, m)) memory. */
export function editDistance<T>(a: ArrayLike<T>, b: ArrayLike<T>): number {
  if (a.length < b.length) [a, b] = [b, a];
  const n = b.length;
  let prev = new Uint32Array(n + 1);
  let cur = new Uint32Array(n + 1);
  for (let j = 0; j <= n; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    const ai = a[i - 1];
    for (let j = 1; j <= n; j++) {
      const substitute = prev[j - 1]! + (ai === b[j - 1] ? 0 : 1);
      const remove = prev[j]! + 1;
      const insert = cur[j - 1]! + 1;
      cur[j] = substitute < remove ? (substitute < insert ? substitute : insert) : remove < insert ? remove : insert;
    }
    [prev, cur] = [cur, prev];
  }
  return prev[n]!;
}

/** Character error rate: edit distance / reference length, on whitespace-normalized text. */
export function characterErrorRate(hypothesis: string, reference: string, caseFold = false): number {
  const ref = normalizeText(reference, caseFold);
  const hyp = normalizeText(hypothesis, caseFold);
  if (ref.length === 0) return hyp.length === 0 ? 0 : 1;
  return editDistance(hyp, ref) / ref.length;
}

function words(text: string, caseFold: boolean): string[] {
  const normalized = normalizeText(text, caseFold);
  return normalized ? normalized.split(" ") : [];
}

/** Word error rate: word-level edit distance / reference word count. */
export function wordErrorRate(hypothesis: string, reference: string, caseFold = false): number {
  const ref = words(reference, caseFold);
  const hyp = words(hypothesis, caseFold);
  if (ref.length === 0) return hyp.length === 0 ? 0 : 1;
  return editDistance(hyp, ref) / ref.length;
}

/** Order-free word F1 (bag of words, case-folded): reading order does not count, recognition does. */
export function wordF1(hypothesis: string, reference: string): number {
  const ref = words(reference, true);
  const hyp = words(hypothesis, true);
  if (ref.length === 0 && hyp.length === 0) return 1;
  const counts = new Map<string, number>();
  for (const w of ref) counts.set(w, (counts.get(w) ?? 0) + 1);
  let hits = 0;
  for (const w of hyp) {
    const c = counts.get(w);
    if (c) {
      hits++;
      counts.set(w, c - 1);
    }
  }
  const precision = hyp.length ? hits / hyp.length : 0;
  const recall = ref.length ? hits / ref.length : 0;
  return precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
}

export interface AccuracyScores {
  cer: number;
  cerFolded: number;
  wer: number;
  werFolded: number;
  wordF1: number;
}

export function scoreText(hypothesis: string, reference: string): AccuracyScores {
  return {
    cer: characterErrorRate(hypothesis, reference),
    cerFolded: characterErrorRate(hypothesis, reference, true),
    wer: wordErrorRate(hypothesis, reference),
    werFolded: wordErrorRate(hypothesis, reference, true),
    wordF1: wordF1(hypothesis, reference),
  };
}
