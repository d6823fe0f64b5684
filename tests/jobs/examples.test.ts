import { execFile, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PDFDocument, StandardFonts } from "pdf-lib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalance, grantCredits, listLedger } from "@/lib/credits";
import { jobExamples } from "@/lib/api-docs/examples";
import { createApiKey } from "@/lib/keys";
import { getStore, resetStore } from "@/lib/store";
import { startInstance, type Instance } from "../support/instance";
import {
  TEST_REDIS_URL,
  assertRedisReachable,
  createTestPrefix,
  deleteKeysWithPrefix,
  pushStoreEnv,
} from "../support/redis";

/*
 * The jobs examples of /docs and docs/api.md (`jobExamples` in lib/api-docs/examples.ts), run as a user runs them — sh with
 * curl, Node, Python — from a directory holding `public/samples/scan.pdf`, against a server instance on the test
 * Redis (tests/support/instance-main.ts: the route handlers and the job runner). They submit, poll as `Retry-After`
 * says, follow `next` through a result too large for one response, and exit non-zero when the service answers an
 * error or the job does not succeed.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");
const IDS = ["job-curl", "job-javascript", "job-python"] as const;
type Id = (typeof IDS)[number];

const hasPython = spawnSync("python3", ["--version"]).status === 0;
const ids = IDS.filter((id) => id !== "job-python" || hasPython);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run an example with `OCR_API_KEY` set, from `cwd`; `edit` changes its code first (and must change something). */
function runExample(
  instance: Instance,
  id: Id,
  key: string,
  cwd: string,
  edit?: (code: string) => string,
): Promise<Run> {
  const original = jobExamples({ origin: instance.baseUrl }).find((example) => example.id === id)!.code;
  const code = edit ? edit(original) : original;
  if (edit) expect(code, `${id}: the edit changed nothing`).not.toBe(original);
  const [command, args] =
    id === "job-curl"
      ? ["sh", ["-c", code]]
      : id === "job-python"
        ? ["python3", ["-c", code]]
        : [process.execPath, ["--input-type=module", "-e", code]];
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd, env: { ...process.env, OCR_API_KEY: key }, maxBuffer: 256 * 1024 * 1024, timeout: 240_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

/**
 * The result parts an example printed: curl prints each part's JSON answer on a line of its own; Node and Python
 * print each part's text and a newline (a `json` part is one line, a `text` one may have many: `lines` tells).
 */
function printedParts(id: Id, stdout: string, { lines }: { lines: boolean }): string[] {
  if (id !== "job-curl") return lines ? stdout.split("\n").filter((line) => line !== "") : [stdout];
  return stdout
    .split("\n")
    .filter((line) => line.includes('"extractedText"'))
    .map((line) => (JSON.parse(line) as { extractedText: string }).extractedText);
}

/** A born-digital PDF whose JSON result (words with boxes) is larger than one response holds (~4 MB). */
async function denseTextPdf(pages: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let p = 1; p <= pages; p++) {
    const page = doc.addPage([595, 842]);
    page.drawText(`Page ${p}`, { x: 40, y: 810, size: 14, font });
    for (let line = 0; line < 95; line++) {
      page.drawText(Array.from({ length: 14 }, (_, w) => `w${p}x${line}x${w}`).join(" "), {
        x: 40,
        y: 790 - line * 8,
        size: 6,
        font,
      });
    }
  }
  return doc.save();
}

/** A scanned PDF (the sample scan on every page): each page needs OCR, so the job runs for a while. */
async function scannedPdf(pages: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const png = await doc.embedPng(await readFile(path.join(ROOT, "public/samples/scan.png")));
  const { width, height } = png.scale(0.24);
  for (let p = 0; p < pages; p++) doc.addPage([width, height]).drawImage(png, { x: 0, y: 0, width, height });
  return doc.save();
}

describe("the jobs examples, run against a server", () => {
  const prefix = createTestPrefix("job-examples");
  const env = {
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefix,
    OCR_ENGINE_PROCESSES: "1",
    OCR_ENGINES: "tesseract",
    OCR_DEFAULT_LANGUAGE: "eng",
  };
  let restoreEnv = () => {};
  let server: Instance;
  let bigDir = "";
  let slowDir = "";

  beforeAll(async () => {
    await assertRedisReachable();
    restoreEnv = pushStoreEnv({ ...env, LOG_REQUESTS: "false" });
    await resetStore();
    const sample = async (bytes: Uint8Array) => {
      const dir = await mkdtemp(path.join(os.tmpdir(), "ocr-job-examples-"));
      await mkdir(path.join(dir, "public/samples"), { recursive: true });
      await writeFile(path.join(dir, "public/samples/scan.pdf"), bytes);
      return dir;
    };
    [server, bigDir, slowDir] = await Promise.all([
      startInstance("server", "docs-examples", env),
      denseTextPdf(30).then(sample),
      scannedPdf(12).then(sample),
    ]);
  }, 240_000);

  afterAll(async () => {
    await server?.stop();
    await resetStore();
    restoreEnv();
    await deleteKeysWithPrefix(prefix);
    await Promise.all([bigDir, slowDir].filter(Boolean).map((dir) => rm(dir, { recursive: true, force: true })));
  }, 180_000);

  async function account(credits: number) {
    const userId = `usr_jobdocs${Math.random().toString(36).slice(2, 10)}`;
    if (credits > 0) await grantCredits(getStore(), { userId, credits });
    const { key } = await createApiKey(getStore(), { userId, name: "job examples" });
    return { userId, key, balance: () => getBalance(getStore(), userId) };
  }

  it.each(ids)(
    "%s reads the sample scan as a job: its text, one credit, the ledger naming the job",
    async (id) => {
      const user = await account(10);
      const run = await runExample(server, id, user.key, ROOT);
      expect(run.code, `${id}: ${run.stderr}`).toBe(0);
      const [text, ...rest] = printedParts(id, run.stdout, { lines: false });
      expect(rest).toEqual([]);
      expect(text).toMatch(/ACME OFFICE SUPPLIES[\s\S]*Total due 82\.40 EUR/);
      expect(await user.balance()).toBe(9);
      const { entries } = await listLedger(getStore(), user.userId);
      expect(entries.filter((entry) => entry.reason !== "grant")).toEqual([
        expect.objectContaining({ reason: "ocr", delta: -1, requestId: expect.stringMatching(/^job_/) }),
      ]);
    },
    240_000,
  );

  it.each(ids)(
    "%s follows next through a result in parts (30 pages of JSON: over one response)",
    async (id) => {
      const user = await account(30);
      const json = (code: string) =>
        code
          .replace("format=text", "format=json")
          .replace('"format":"text"', '"format":"json"')
          .replace('format: "text"', 'format: "json"')
          .replace('"format": "text"', '"format": "json"');
      const run = await runExample(server, id, user.key, bigDir, json);
      expect(run.code, `${id}: ${run.stderr.slice(0, 2000)}`).toBe(0);
      const parts = printedParts(id, run.stdout, { lines: true }).map(
        (part) => JSON.parse(part) as { pages: Array<{ number: number }> },
      );
      expect(parts.length, id).toBeGreaterThanOrEqual(2);
      expect(parts.flatMap((part) => part.pages.map((page) => page.number))).toEqual(
        Array.from({ length: 30 }, (_, i) => i + 1),
      );
      expect(await user.balance()).toBe(0);
    },
    240_000,
  );

  it.each(ids)(
    "%s exits non-zero with the service's error when it refuses the job (no credits: 402)",
    async (id) => {
      const user = await account(0);
      const run = await runExample(server, id, user.key, ROOT);
      // curl --fail-with-body: 22, the error body on stdout; Node (a thrown error) and Python (sys.exit): 1, on stderr.
      expect(run.code, `${id}: ${run.stdout} ${run.stderr}`).toBe(id === "job-curl" ? 22 : 1);
      expect(id === "job-curl" ? run.stdout : run.stderr).toContain("insufficient_credits");
      if (id !== "job-curl") expect(run.stdout).toBe("");
    },
    240_000,
  );

  it.each(ids)(
    "%s exits 1 when the job does not succeed (cancelled while it runs), printing no result",
    async (id) => {
      const user = await account(20);
      const running = runExample(server, id, user.key, slowDir);
      // Cancel the job as soon as it exists, as another client of the account would.
      let cancelled = false;
      for (let i = 0; i < 600 && !cancelled; i++) {
        const list = (await (
          await fetch(`${server.baseUrl}/api/ocr/jobs`, { headers: { "x-api-key": user.key } })
        ).json()) as {
          jobs: Array<{ links: { self: string } }>;
        };
        const job = list.jobs[0];
        if (job) {
          const response = await fetch(`${server.baseUrl}${job.links.self}`, {
            method: "DELETE",
            headers: { "x-api-key": user.key },
          });
          expect(response.status).toBe(200);
          cancelled = true;
        } else {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      expect(cancelled).toBe(true);
      const run = await running;
      expect(run.code, `${id}: ${run.stdout} ${run.stderr}`).toBe(1);
      if (id === "job-curl") {
        expect(run.stdout).toContain('"status":"cancelled"');
        expect(run.stdout).not.toContain('"extractedText"');
      } else {
        expect(run.stderr).toMatch(/job cancelled/);
        expect(run.stdout).toBe("");
      }
      // Whatever was not read came back.
      expect(await user.balance()).toBeGreaterThan(20 - 12);
    },
    240_000,
  );
});

describe("docs/api.md", () => {
  it("shows the jobs examples exactly as /docs does (for https://ocr.example.com): the ones run above", async () => {
    const markdown = await readFile(path.join(ROOT, "docs/api.md"), "utf8");
    for (const example of jobExamples({ origin: "https://ocr.example.com" })) {
      expect(markdown, example.id).toContain(`\`\`\`${example.language}\n${example.code}\n\`\`\``);
    }
  });
});
