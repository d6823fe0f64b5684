import { describe, expect, it } from "vitest";
import { detectLanguage } from "@/lib/ocr/engine/language-detect";
import { availableLanguages, chooseLanguages } from "@/lib/ocr/model/languages";
import { TEXTS } from "@/scripts/make-fixtures";
import { expectOcrError } from "../support/ocr";

// The languages package.json installs (@tesseract.js-data/*).
const INSTALLED = ["eng", "fra", "deu", "spa", "ita", "por", "nld"];

describe("availableLanguages", () => {
  it("is what is configured and installed; English always", () => {
    expect(availableLanguages(["fra", "deu"])).toEqual(["eng", "fra", "deu"]);
    expect(availableLanguages([])).toEqual(["eng"]);
    expect(availableLanguages(INSTALLED)).toEqual(INSTALLED);
  });

  it("drops configured languages whose data is not installed", () => {
    expect(availableLanguages(["fra", "xyz", "chi_sim"])).toEqual(["eng", "fra"]);
  });
});

describe("chooseLanguages", () => {
  const available = ["eng", "fra", "deu", "spa"];

  it.each([
    [undefined, "auto", { langs: ["eng"], auto: true }],
    ["auto", "eng", { langs: ["eng"], auto: true }],
    [" AUTO ", "eng", { langs: ["eng"], auto: true }],
    ["", "auto", { langs: ["eng"], auto: true }],
    [undefined, "eng", { langs: ["eng"], auto: false }],
    ["eng", "auto", { langs: ["eng"], auto: false }],
    ["fra", "auto", { langs: ["fra"], auto: false }],
    ["eng+fra", "auto", { langs: ["eng", "fra"], auto: false }],
    ["fra+eng", "auto", { langs: ["fra", "eng"], auto: false }],
    ["deu,eng", "auto", { langs: ["deu", "eng"], auto: false }],
    ["ENG+Fra", "auto", { langs: ["eng", "fra"], auto: false }],
    ["eng+eng", "auto", { langs: ["eng"], auto: false }],
    ["eng+fra+deu", "auto", { langs: ["eng", "fra", "deu"], auto: false }],
  ] as const)("%j (default %j) → %j", (requested, fallback, expected) => {
    expect(chooseLanguages(requested, fallback, available)).toEqual(expected);
  });

  it.each([["xyz"], ["eng+xyz"], ["klingon"], ["ita"]])(
    "%j: unknown or not installed → unsupported_language naming what is available",
    async (requested) => {
      const error = await expectOcrError(() => chooseLanguages(requested, "auto", available), "unsupported_language");
      expect(error.message).toContain(requested.split("+").pop()!);
      for (const lang of ["auto", ...available]) expect(error.message).toContain(lang);
    },
  );

  it.each([["+"], [",,"], ["+ +"]])("%j: no language at all → unsupported_language", async (requested) => {
    await expectOcrError(() => chooseLanguages(requested, "auto", available), "unsupported_language");
  });

  it("more than three languages at once → too_many_languages", async () => {
    await expectOcrError(() => chooseLanguages("eng+fra+deu+spa", "auto", available), "too_many_languages");
  });

  it("a default naming an unavailable language is refused too", async () => {
    await expectOcrError(() => chooseLanguages(undefined, "fra", ["eng"]), "unsupported_language");
  });
});

describe("detectLanguage", () => {
  const french = TEXTS.french.join("\n");
  /** What Tesseract's English model makes of French: the accents go. */
  const frenchAsReadByEnglish = french.normalize("NFD").replace(/[\u0300-\u036f]/g, "");
  const english = [...TEXTS.paragraph, ...TEXTS.columnLeft, ...TEXTS.columnRight].join("\n");
  const german =
    "Der Bericht ist fertig und wir haben die Zahlen mit den Kollegen in der Abteilung besprochen. " +
    "Es ist nicht das erste Mal, dass die Ergebnisse auf dem Tisch liegen, aber sie sind auch besser als im Vorjahr.";

  it.each([
    ["French", french],
    ["French without accents", frenchAsReadByEnglish],
  ])("%s → fra", (_name, text) => {
    const guess = detectLanguage(text, INSTALLED);
    expect(guess?.lang).toBe("fra");
    expect(guess!.score).toBeGreaterThan(0);
    expect(guess!.score).toBeLessThanOrEqual(1);
  });

  it("German → deu", () => {
    expect(detectLanguage(german, INSTALLED)?.lang).toBe("deu");
  });

  it.each([
    ["the fixtures' English", english],
    ["one English paragraph", TEXTS.columnLeft.join(" ")],
    ["the receipt", TEXTS.receipt.join("\n")],
  ])("%s → null (stays English)", (_name, text) => {
    expect(detectLanguage(text, INSTALLED)).toBeNull();
  });

  it.each([
    ["a short French sentence", "Le présent de l'indicatif est utilisé pour exprimer une vérité."],
    ["one French line", TEXTS.french[0]],
    ["empty", ""],
    ["numbers only", "12 14 16 18 20 22 24 26 28 30 32 34 36 38 40 42 44 46 48 50 52"],
  ])("%s → null (too little evidence)", (_name, text) => {
    expect(detectLanguage(text, INSTALLED)).toBeNull();
  });

  it("only answers with a candidate language", () => {
    expect(detectLanguage(french, ["eng"])).toBeNull();
    expect(detectLanguage(french, ["eng", "deu"])).toBeNull();
  });
});
