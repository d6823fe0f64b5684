/**
 * PDF objects read the way pdf.js reads them (its `Lexer` and `Parser`, pdfjs-dist/legacy/build/pdf.worker.mjs), for
 * the checks that run before pdf.js opens a file (pdf-streams.ts). A check that reads a dictionary differently from
 * pdf.js can be walked around: a name spelled with `#xx` escapes, a `(<<)` inside a string, a comment between tokens.
 * So: names decode `#xx` as pdf.js does, strings and comments are skipped as tokens, numbers parse as pdf.js parses
 * them, `N G R` is a reference, and a repeated key keeps its last value.
 */

export class PdfName {
  constructor(readonly name: string) {}
}

export class PdfRef {
  constructor(
    readonly num: number,
    readonly gen: number,
  ) {}
}

/** A keyword (`obj`, `stream`, `R`, `ID`, an operator) or a delimiter (`[`, `<<`, …). */
export class PdfCmd {
  constructor(readonly cmd: string) {}
}

export type PdfDict = Map<string, PdfValue>;
export type PdfValue = number | boolean | null | string | PdfName | PdfRef | PdfCmd | PdfDict | PdfValue[];

/** The end of the input, as a token. */
const EOF = Symbol("EOF");
type Token = Exclude<PdfValue, PdfDict | PdfValue[] | PdfRef> | typeof EOF;

/** pdf.js's `specialChars`: 1 for whitespace, 2 for delimiters. */
const SPECIAL = new Uint8Array(256);
for (const ch of [0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]) SPECIAL[ch] = 1;
for (const ch of [0x25, 0x28, 0x29, 0x2f, 0x3c, 0x3e, 0x5b, 0x5d, 0x7b, 0x7d]) SPECIAL[ch] = 2;

export function isPdfWhite(ch: number): boolean {
  return SPECIAL[ch] === 1;
}

function hexDigit(ch: number): number {
  if (ch >= 0x30 && ch <= 0x39) return ch & 0x0f;
  if ((ch >= 0x41 && ch <= 0x46) || (ch >= 0x61 && ch <= 0x66)) return (ch & 0x0f) + 9;
  return -1;
}

/** Thrown when a read would cost more than its budget of bytes (see `PdfReader`). */
export class PdfBudgetError extends Error {}

/**
 * Tokens from `bytes` starting at `pos`. Every byte the lexer looks at is charged to `budget` (shared between readers),
 * so a file built to make the checks re-read overlapping objects over and over ends with a `PdfBudgetError`.
 */
class Lexer {
  pos: number;
  constructor(
    private readonly bytes: Uint8Array,
    pos: number,
    private readonly budget: { left: number },
  ) {
    this.pos = pos;
  }

  private peek(): number {
    return this.pos < this.bytes.length ? this.bytes[this.pos]! : -1;
  }

  private take(): number {
    if (--this.budget.left < 0) throw new PdfBudgetError("read budget exhausted");
    return this.pos < this.bytes.length ? this.bytes[this.pos++]! : -1;
  }

  next(): Token {
    let ch: number;
    // Whitespace and comments.
    for (;;) {
      ch = this.peek();
      if (ch < 0) return EOF;
      if (ch === 0x25) {
        while (ch >= 0 && ch !== 0x0a && ch !== 0x0d) {
          this.take();
          ch = this.peek();
        }
      } else if (SPECIAL[ch] === 1) {
        this.take();
      } else {
        break;
      }
    }
    switch (ch) {
      case 0x28:
        this.take();
        return this.string();
      case 0x2f:
        this.take();
        return this.name();
      case 0x5b:
      case 0x5d:
      case 0x7b:
      case 0x7d:
        this.take();
        return new PdfCmd(String.fromCharCode(ch));
      case 0x3c:
        this.take();
        if (this.peek() === 0x3c) {
          this.take();
          return new PdfCmd("<<");
        }
        return this.hexString();
      case 0x3e:
        this.take();
        if (this.peek() === 0x3e) {
          this.take();
          return new PdfCmd(">>");
        }
        return new PdfCmd(">");
      case 0x29:
        this.take();
        return new PdfCmd(")"); // pdf.js throws here; nothing after it is read as this object
    }
    if ((ch >= 0x30 && ch <= 0x39) || ch === 0x2b || ch === 0x2d || ch === 0x2e) return this.number();
    let word = String.fromCharCode(this.take());
    if (ch < 0x20 || ch > 0x7f) {
      const after = this.peek();
      if (after >= 0x20 && after <= 0x7f) return new PdfCmd(word);
    }
    for (ch = this.peek(); ch >= 0 && !SPECIAL[ch] && word.length < 128; ch = this.peek())
      word += String.fromCharCode(this.take());
    if (word === "true") return true;
    if (word === "false") return false;
    if (word === "null") return null;
    return new PdfCmd(word);
  }

  /** pdf.js's `getNumber`, including its tolerance of `--1`, `+.5` and a minus sign in the middle. */
  private number(): number {
    let ch = this.take();
    let sign = 1;
    let divideBy = 0;
    if (ch === 0x2d) {
      sign = -1;
      ch = this.take();
      if (ch === 0x2d) ch = this.take();
    } else if (ch === 0x2b) {
      ch = this.take();
    }
    while (ch === 0x0a || ch === 0x0d) ch = this.take();
    if (ch === 0x2e) {
      divideBy = 10;
      ch = this.take();
    }
    if (ch < 0x30 || ch > 0x39) {
      if (ch >= 0) this.pos--; // pdf.js reads 0 here (or throws); the character is the next token's
      return 0;
    }
    let value = ch - 0x30;
    for (ch = this.peek(); ch >= 0; ch = this.peek()) {
      if (ch >= 0x30 && ch <= 0x39) {
        if (divideBy !== 0) divideBy *= 10;
        value = value * 10 + (ch - 0x30);
      } else if (ch === 0x2e) {
        if (divideBy !== 0) break;
        divideBy = 1;
      } else if (ch !== 0x2d) {
        break;
      }
      this.take();
    }
    return sign * (divideBy !== 0 ? value / divideBy : value);
  }

  /** pdf.js's `getName`: `#xx` is the byte xx; a `#` not followed by two hex digits stays as it is. */
  private name(): PdfName {
    let out = "";
    for (let ch = this.peek(); ch >= 0 && !SPECIAL[ch]; ch = this.peek()) {
      this.take();
      if (ch !== 0x23) {
        out += String.fromCharCode(ch);
        continue;
      }
      const first = this.peek();
      if (first < 0 || SPECIAL[first]) {
        out += "#";
        break;
      }
      this.take();
      const high = hexDigit(first);
      if (high === -1) {
        out += `#${String.fromCharCode(first)}`;
        continue;
      }
      const second = this.peek();
      const low = second < 0 ? -1 : hexDigit(second);
      if (low === -1) {
        out += `#${String.fromCharCode(first)}`;
        if (second < 0 || SPECIAL[second]) break;
        this.take();
        out += String.fromCharCode(second);
        continue;
      }
      this.take();
      out += String.fromCharCode((high << 4) | low);
    }
    return new PdfName(out);
  }

  /** A literal string; its value is not needed by the checks, only where it ends (nested parentheses, escapes). */
  private string(): string {
    let depth = 1;
    for (;;) {
      const ch = this.take();
      if (ch < 0) return "";
      if (ch === 0x5c) this.take();
      else if (ch === 0x28) depth++;
      else if (ch === 0x29 && --depth === 0) return "";
    }
  }

  private hexString(): string {
    for (;;) {
      const ch = this.take();
      if (ch < 0 || ch === 0x3e) return "";
    }
  }
}

/** Reads objects at byte offsets of one buffer; all reads share one budget of bytes. */
export class PdfReader {
  private readonly budget: { left: number };

  constructor(
    readonly bytes: Uint8Array,
    /** Most bytes all reads together may look at (default: 16 × the buffer, at least 1 MB). */
    budgetBytes = Math.max(16 * bytes.length, 1 << 20),
  ) {
    this.budget = { left: budgetBytes };
  }

  /**
   * The object at `pos`, as pdf.js's `Parser.getObj` reads it. When it is a dictionary followed by the `stream`
   * keyword, `streamAt` is the offset right after that keyword (where pdf.js's `makeStream` goes on).
   */
  readObject(pos: number): { value: PdfValue | undefined; streamAt?: number } {
    const parser = new Parser(new Lexer(this.bytes, pos, this.budget));
    const value = parser.value();
    if (value instanceof Map && parser.peekIs("stream")) return { value, streamAt: parser.shift().end };
    return { value };
  }

  /**
   * The dictionary of an inline image: `key value` pairs from `pos` up to the keyword `ID` (pdf.js's
   * `makeInlineImage`), and the offset where its data starts (after `ID` and one white-space byte). Null when the
   * pairs do not end in `ID`.
   */
  readInlineImageDict(pos: number): { dict: PdfDict; dataAt: number } | null {
    const parser = new Parser(new Lexer(this.bytes, pos, this.budget));
    const dict: PdfDict = new Map();
    while (!parser.peekIs("ID")) {
      const key = parser.value();
      if (!(key instanceof PdfName)) return null;
      const value = parser.value();
      if (value === undefined) return null;
      dict.set(key.name, value);
    }
    return { dict, dataAt: parser.shift().end + 1 };
  }
}

interface Lexed {
  token: Token;
  /** Offset right after the token. */
  end: number;
}

/**
 * A parser with pdf.js's look-ahead: two tokens where `N G R` may follow a number, none past the keyword `ID` (the
 * bytes after it are image data) — and none past `stream`, which is only ever peeked at one token ahead.
 */
class Parser {
  private readonly ahead: Lexed[] = [];

  constructor(private readonly lexer: Lexer) {}

  private peek(count: number): Lexed[] {
    while (this.ahead.length < count) {
      const last = this.ahead.at(-1)?.token;
      if (last instanceof PdfCmd && last.cmd === "ID") break;
      const token = this.lexer.next();
      this.ahead.push({ token, end: this.lexer.pos });
    }
    return this.ahead;
  }

  peekIs(cmd: string): boolean {
    const first = this.peek(1)[0]?.token;
    return first instanceof PdfCmd && first.cmd === cmd;
  }

  shift(): Lexed {
    this.peek(1);
    return this.ahead.shift() ?? { token: EOF, end: this.lexer.pos };
  }

  /** One value; `undefined` at the end of the input. */
  value(depth = 0): PdfValue | undefined {
    const { token } = this.shift();
    if (token === EOF) return undefined;
    if (token instanceof PdfCmd) {
      if (depth > 256) return token; // deeper than any real PDF nests: read no further
      if (token.cmd === "[") {
        const array: PdfValue[] = [];
        while (!this.peekIs("]")) {
          const item = this.value(depth + 1);
          if (item === undefined) return array;
          array.push(item);
        }
        this.shift();
        return array;
      }
      if (token.cmd === "<<") {
        const dict: PdfDict = new Map();
        while (!this.peekIs(">>")) {
          const { token: key } = this.shift();
          if (key === EOF) return dict;
          if (!(key instanceof PdfName)) continue; // pdf.js skips one token where a key is not a name
          const value = this.value(depth + 1);
          if (value === undefined) return dict;
          dict.set(key.name, value);
        }
        this.shift();
        return dict;
      }
      return token;
    }
    if (typeof token === "number" && Number.isInteger(token)) {
      const [gen, r] = this.peek(2);
      if (
        typeof gen?.token === "number" &&
        Number.isInteger(gen.token) &&
        r?.token instanceof PdfCmd &&
        r.token.cmd === "R"
      ) {
        this.shift();
        this.shift();
        return new PdfRef(token, gen.token);
      }
    }
    return token;
  }
}
