import { describe, expect, it } from "vitest";
import { characterErrorRate, editDistance, normalizeText, scoreText, wordErrorRate, wordF1 } from "@/bench/metrics";

// These functions are the oracles of the engine tests: they are tested first.

describe("normalizeText", () => {
  it.each([
    ["  a \t b\n\nc  ", false, "a b c"],
    ["page one\fpage two", false, "page one page two"],
    ["Mixed CASE", true, "mixed case"],
    ["Mixed CASE", false, "Mixed CASE"],
    ["e\u0301te\u0301", false, "été"], // NFC: decomposed accents compose
    ["", false, ""],
    [" \n\f ", false, ""],
  ] as const)("%j (fold %s) → %j", (input, fold, expected) => {
    expect(normalizeText(input, fold)).toBe(expected);
  });
});

describe("editDistance", () => {
  it.each([
    ["kitten", "sitting", 3],
    ["sitting", "kitten", 3],
    ["flaw", "lawn", 2],
    ["", "abc", 3],
    ["abc", "", 3],
    ["", "", 0],
    ["same", "same", 0],
    ["abc", "acb", 2], // a swap is two edits
    ["intention", "execution", 5],
  ] as const)("%j ↔ %j = %i", (a, b, expected) => {
    expect(editDistance(a, b)).toBe(expected);
  });

  it("works on word arrays", () => {
    expect(editDistance(["the", "cat", "sat"], ["the", "dog", "sat", "down"])).toBe(2);
    expect(editDistance<string>([], ["a"])).toBe(1);
  });
});

describe("characterErrorRate", () => {
  it.each([
    ["abc", "abc", 0],
    ["abd", "abc", 1 / 3],
    ["", "abc", 1],
    ["abcdef", "abc", 1], // three insertions over three reference characters
    ["a  b\n\nc", "a b c", 0], // whitespace is normalized
    ["x", "", 1],
    ["", "", 0],
    ["Optical charactor recognition", "Optical character recognition", 1 / 29],
  ] as const)("%j against %j = %d", (hypothesis, reference, expected) => {
    expect(characterErrorRate(hypothesis, reference)).toBeCloseTo(expected, 10);
  });

  it("is case-sensitive unless folded", () => {
    expect(characterErrorRate("HELLO", "hello")).toBe(1);
    expect(characterErrorRate("HELLO", "hello", true)).toBe(0);
  });

  it("can exceed 1 when the hypothesis is much longer", () => {
    expect(characterErrorRate("abcdefgh", "ab")).toBe(3);
  });

  it("is not symmetric: it is relative to the reference", () => {
    expect(characterErrorRate("ab", "abcd")).toBe(0.5);
    expect(characterErrorRate("abcd", "ab")).toBe(1);
  });

  it("counts reading order: swapped columns are costly", () => {
    const left = "apples grow on trees";
    const right = "rivers carry water down";
    expect(characterErrorRate(`${left} ${right}`, `${left} ${right}`)).toBe(0);
    expect(characterErrorRate(`${right} ${left}`, `${left} ${right}`)).toBeGreaterThan(0.3);
  });
});

describe("wordErrorRate", () => {
  it.each([
    ["the cat sat", "the cat sat", 0],
    ["the cat sat", "the dog sat", 1 / 3],
    ["the cat", "the cat sat", 1 / 3],
    ["", "one two", 1],
    ["", "", 0],
    ["x", "", 1],
  ] as const)("%j against %j = %d", (hypothesis, reference, expected) => {
    expect(wordErrorRate(hypothesis, reference)).toBeCloseTo(expected, 10);
  });

  it("folds case on request", () => {
    expect(wordErrorRate("The Cat", "the cat")).toBe(1);
    expect(wordErrorRate("The Cat", "the cat", true)).toBe(0);
  });
});

describe("wordF1", () => {
  it.each([
    ["a b c", "a b c", 1],
    ["c b a", "a b c", 1], // order-free
    ["A B", "a b", 1], // case-folded
    ["a b c", "a b d", 2 / 3],
    ["a a", "a", 2 / 3], // precision 1/2, recall 1
    ["a", "a a", 2 / 3], // precision 1, recall 1/2
    ["x y", "a b", 0],
    ["", "a", 0],
    ["a", "", 0],
    ["", "", 1],
  ] as const)("%j against %j = %d", (hypothesis, reference, expected) => {
    expect(wordF1(hypothesis, reference)).toBeCloseTo(expected, 10);
  });
});

describe("scoreText", () => {
  it("bundles all measures", () => {
    expect(scoreText("The cat", "the cat")).toEqual({
      cer: 1 / 7,
      cerFolded: 0,
      wer: 0.5,
      werFolded: 0,
      wordF1: 1,
    });
  });
});
