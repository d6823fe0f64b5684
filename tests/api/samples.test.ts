import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { services } from "@/lib/services";
import { callOcr, createAccount, expectOcrOk, withStore } from "./support";

/*
 * The sample documents the README and the docs use (public/samples/, committed; `npm run samples` writes them) exist
 * and read as their examples promise, through the route handler on the real engine.
 */
const ROOT = path.resolve(import.meta.dirname, "../..");
const SAMPLES = path.join(ROOT, "public/samples");
const read = (name: string) => fs.readFileSync(path.join(SAMPLES, name));

withStore("memory");
afterAll(() => services().pool.terminate());

describe("sample documents", () => {
  it.each([
    { file: "scan.png", truth: "scan.txt", pages: 1, maxCer: 0.03 },
    { file: "scan.pdf", truth: "scan.txt", pages: 1, maxCer: 0.03 },
    { file: "report.pdf", truth: "report.txt", pages: 2, maxCer: 0.01 },
  ])("$file reads as $truth says ($pages page(s))", async ({ file, truth, pages, maxCer }) => {
    const account = await createAccount(10);
    const body = await expectOcrOk(await callOcr({ image: read(file).toString("base64") }, { key: account.key }));
    expect(body.creditsUsed).toBe(pages);
    expect(characterErrorRate(body.extractedText.replaceAll("\f", "\n"), read(truth).toString("utf8"))).toBeLessThan(
      maxCer,
    );
  });

  it("scan.png (an invoice) in Markdown keeps its item rows and header lines apart, as its text does", async () => {
    const account = await createAccount(10);
    const body = await expectOcrOk(
      await callOcr(
        { image: read("scan.png").toString("base64"), options: { format: "markdown" } },
        { key: account.key },
      ),
    );
    const lines = body.extractedText.split("\n").map((line) => line.trimEnd());
    for (const line of [
      "Paper A4, 5 reams 24.50",
      "Ink cartridges, 2 pieces 38.00",
      "Desk lamp 19.90",
      "Invoice 2026-0417",
      "Date: 12 March 2026",
    ]) {
      expect(lines, line).toContain(line);
    }
  });

  it("every public/samples/ file the README and docs/ name exists", () => {
    const documents = ["README.md", ...fs.readdirSync(path.join(ROOT, "docs")).map((name) => `docs/${name}`)];
    const named = new Set<string>();
    for (const document of documents) {
      for (const match of fs
        .readFileSync(path.join(ROOT, document), "utf8")
        .matchAll(/(?:public)?\/samples\/([\w.-]+\.\w+)/g)) {
        named.add(match[1]!);
      }
    }
    expect(named.size).toBeGreaterThan(0);
    for (const name of named) expect(fs.existsSync(path.join(SAMPLES, name)), `public/samples/${name}`).toBe(true);
  });
});
