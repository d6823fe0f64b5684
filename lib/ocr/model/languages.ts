import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import { OcrError } from "./ocr-error";

/** What a request asked for: explicit languages (primary first), or `auto` (English, re-read in another
 * installed language when the text is clearly in it). */
export interface LanguageChoice {
  langs: string[];
  auto: boolean;
}

/**
 * A checked choice as a job record keeps it (`auto`, or the languages joined by `+`), and back. Written from a
 * `LanguageChoice` that `chooseLanguages` made, so reading it back checks nothing again.
 */
export function languageSpec(choice: LanguageChoice): string {
  return choice.auto ? "auto" : choice.langs.join("+");
}

export function fromLanguageSpec(spec: string): LanguageChoice {
  // Records written before the spec was canonical held the request's own spelling (`ENG, deu`): read the same.
  const langs = spec
    .trim()
    .toLowerCase()
    .split(/[\s+,]+/)
    .filter(Boolean);
  return langs.length === 0 || langs[0] === "auto" ? { langs: ["eng"], auto: true } : { langs, auto: false };
}

const DATA_VARIANT = "4.0.0_best_int"; // LSTM-only integer models: small and fast

// Resolve from the app's root, not from this (possibly bundled) module's location.
const requireFromApp = createRequire(path.join(process.cwd(), "noop.js"));

/** The directory of `@tesseract.js-data/<lang>`'s LSTM model, or null when the package is not installed. */
function packageDataDir(lang: string): string | null {
  try {
    const dir = path.join(
      path.dirname(requireFromApp.resolve(`@tesseract.js-data/${lang}/package.json`)),
      DATA_VARIANT,
    );
    return existsSync(path.join(dir, `${lang}.traineddata.gz`)) ? dir : null;
  } catch {
    return null;
  }
}

/** Languages that are both configured (`OCR_LANGUAGES`) and installed. English always is. */
export function availableLanguages(configured: string[]): string[] {
  const langs = new Set(["eng", ...configured]);
  return [...langs].filter((lang) => packageDataDir(lang) !== null);
}

/**
 * Parse a language choice (`eng`, `eng+fra`, `deu,eng`, `auto`); unknown or uninstalled languages are an
 * `unsupported_language` naming what is available.
 */
export function chooseLanguages(requested: string | undefined, fallback: string, available: string[]): LanguageChoice {
  const spec = (requested ?? fallback).trim().toLowerCase();
  if (spec === "" || spec === "auto") return { langs: ["eng"], auto: true };
  const langs = [...new Set(spec.split(/[\s+,]+/).filter(Boolean))];
  const unknown = langs.filter((lang) => !available.includes(lang));
  if (unknown.length > 0 || langs.length === 0) {
    throw new OcrError(
      "unsupported_language",
      `unsupported language ${unknown.map((l) => `"${l}"`).join(", ") || `"${spec}"`}; available: auto, ${available.join(", ")} (combine with +)`,
    );
  }
  if (langs.length > 3) throw new OcrError("too_many_languages", "at most 3 languages at once");
  return { langs, auto: false };
}

let dataDir: string | undefined;
const copies = new Map<string, Promise<void>>();

/**
 * tesseract.js reads every language from one `langPath` directory, while each language ships in its own npm
 * package: gather the requested ones (copied once per instance) into a directory under the temp dir.
 * Nothing is ever fetched from a CDN.
 */
export async function languageDataPath(langs: string[]): Promise<string> {
  dataDir ??= path.join(os.tmpdir(), `ocr-tessdata-${DATA_VARIANT}`);
  await fs.mkdir(dataDir, { recursive: true });
  const dir = dataDir;
  await Promise.all(
    langs.map((lang) => {
      let copy = copies.get(lang);
      if (!copy) {
        copy = copyLanguage(lang, dir);
        copies.set(lang, copy);
        copy.catch(() => copies.delete(lang));
      }
      return copy;
    }),
  );
  return dir;
}

async function copyLanguage(lang: string, dir: string): Promise<void> {
  const source = packageDataDir(lang);
  if (!source) throw new Error(`Language data for "${lang}" is not installed (npm i @tesseract.js-data/${lang})`);
  const target = path.join(dir, `${lang}.traineddata.gz`);
  const temp = `${target}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  await fs.copyFile(path.join(source, `${lang}.traineddata.gz`), temp);
  await fs.rename(temp, target); // atomic: concurrent instances never see half a file
}

let nativeDir: Promise<string> | undefined;
const unpacked = new Map<string, Promise<void>>();

/**
 * The system's libtesseract (lib/ocr/engine/tesseract-native.ts) reads `<lang>.traineddata` unpacked, all languages
 * from one directory: the same models as tesseract.js's, from the same npm packages (never the distribution's
 * tessdata), unpacked once into a directory of this user's own under the temp dir. The directory is made private
 * (0700) and refused when it is a link, belongs to another user or others may write to it: a planted model is code
 * the engine would run. A model is unpacked again when its size differs from the one the package's gzip trailer
 * states (another package version); the write is atomic, so concurrent processes never read half a file.
 */
export async function nativeLanguageDataPath(langs: string[]): Promise<string> {
  nativeDir ??= privateDirectory(
    path.join(os.tmpdir(), `ocr-tessdata-${DATA_VARIANT}-native-${process.getuid?.() ?? "user"}`),
  );
  nativeDir.catch(() => (nativeDir = undefined));
  const dir = await nativeDir;
  await Promise.all(
    langs.map((lang) => {
      let unpack = unpacked.get(lang);
      if (!unpack) {
        unpack = unpackLanguage(lang, dir);
        unpacked.set(lang, unpack);
        unpack.catch(() => unpacked.delete(lang));
      }
      return unpack;
    }),
  );
  return dir;
}

async function privateDirectory(dir: string): Promise<string> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const stat = await fs.lstat(dir);
  const uid = process.getuid?.();
  if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid) || (stat.mode & 0o022) !== 0) {
    throw new Error(`${dir} is not a private directory of this user: language data is not unpacked there`);
  }
  return dir;
}

async function unpackLanguage(lang: string, dir: string): Promise<void> {
  const source = packageDataDir(lang);
  if (!source) throw new Error(`Language data for "${lang}" is not installed (npm i @tesseract.js-data/${lang})`);
  const gz = await fs.readFile(path.join(source, `${lang}.traineddata.gz`));
  const target = path.join(dir, `${lang}.traineddata`);
  // gzip's last four bytes: the unpacked size (mod 2³²; the models are a few MB).
  const size = gz.length >= 4 ? gz.readUInt32LE(gz.length - 4) : -1;
  const existing = await fs.lstat(target).catch(() => null);
  if (existing?.isFile() && existing.size === size) return;
  const temp = `${target}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  await fs.writeFile(temp, await promisify(gunzip)(gz), { mode: 0o600 });
  await fs.rename(temp, target);
}
