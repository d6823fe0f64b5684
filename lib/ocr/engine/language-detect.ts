/**
 * Which installed language a text read with the English model is really in, from very common function
 * words. Deliberately conservative: it only answers when the evidence is overwhelming, because a wrong
 * answer costs a second recognition pass and an English document must stay English. Words are listed
 * without accents because the English model drops them.
 */
const STOPWORDS: Record<string, string[]> = {
  eng: "the and of to in is that for it with as was on are be by this from or an at which not have you your we our".split(
    " ",
  ),
  fra: "le la les des est et une du dans que qui pour pas sur avec sont nous vous ils elles au aux ce cette mais je tu il elle etre avoir leur ses son sa".split(
    " ",
  ),
  deu: "der die das und ist nicht mit den dem ein eine einer zu von fur auf ich sie es wir ihr sind auch werden wird oder aber bei nach sich des im".split(
    " ",
  ),
  spa: "el los las del que y en un una es por con para no se su al lo como mas pero sus ya este esta son muy tambien".split(
    " ",
  ),
  ita: "il lo gli di che e un una per non con del della sono si da in ma come anche questo alla nel delle dei".split(
    " ",
  ),
  por: "o os as do da em um uma para com nao se na no por mais dos das como mas ao sao ou tambem muito".split(" "),
  nld: "de het een en van ik te dat die in is niet op zijn met voor er maar ook als aan bij door wordt naar ze".split(
    " ",
  ),
};

const sets = new Map(Object.entries(STOPWORDS).map(([lang, words]) => [lang, new Set(words)]));

export interface LanguageGuess {
  lang: string;
  /** Share of tokens that are this language's stopwords. */
  score: number;
}

export function detectLanguage(text: string, candidates: string[]): LanguageGuess | null {
  const tokens = text
    .toLowerCase()
    .normalize("NFD")
    .replace(/[\u0300-\u036f]/g, "")
    .split(/[^a-z]+/)
    .filter((t) => t.length > 0 && t.length < 12);
  if (tokens.length < 20) return null;
  const score = (lang: string): number => {
    const words = sets.get(lang);
    if (!words) return 0;
    let hits = 0;
    for (const t of tokens) if (words.has(t)) hits++;
    return hits / tokens.length;
  };
  const english = score("eng");
  let best: LanguageGuess | null = null;
  for (const lang of candidates) {
    if (lang === "eng" || !sets.has(lang)) continue;
    const s = score(lang);
    if (!best || s > best.score) best = { lang, score: s };
  }
  if (best && best.score >= 0.12 && best.score > 2 * english) return best;
  return null;
}
