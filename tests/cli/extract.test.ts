import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { ocrDocumentSchema } from "@/lib/ocr/model";
import { FIXTURE_DIR, createAccount, expectLedgerConsistent, groundTruth, withStore } from "../api/support";
import { phonePhoto } from "../support/phone-photo";
import { runCli, unusedPort, withBuiltCli, withTempDirs, withTestServer } from "./support";

/*
 * `ocr extract` and `ocr balance` as a user runs them: the bundled CLI in a child process, against the real route
 * handlers (real engine, memory store) on a localhost port, with an account and key made here.
 */

const IMAGE_CER = 0.05;
const PDF_CER = 0.01;
const PNG = path.join(FIXTURE_DIR, "paragraph.png");
const PDF = path.join(FIXTURE_DIR, "born-digital.pdf");

withStore("memory");
const cli = withBuiltCli();
const server = withTestServer();
const tempDir = withTempDirs();

afterEach(() => {
  server.current.intercept = undefined;
  server.current.requests.length = 0;
});

function ocr(args: string[], key: string | undefined, options: { cwd?: string; env?: Record<string, string> } = {}) {
  return runCli(cli.path, args, {
    cwd: options.cwd,
    env: { OCR_BASE_URL: server.current.baseUrl, FETCH_MCP_SERVER_API_KEY: key, ...options.env },
  });
}

const ocrRequests = () => server.current.requests.filter((request) => request.path === "/api/ocr/process");

/** Markdown without its heading marks and page rules, for CER against the plain ground truth. */
const unmark = (markdown: string) => markdown.replace(/^#+ /gm, "").replace(/^---$/gm, "");

describe("ocr extract: one file to stdout, in each format", () => {
  it("text: a PNG", async () => {
    const account = await createAccount(10);
    const run = await ocr(["extract", PNG], account.key);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(characterErrorRate(run.stdout, groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);
    expect(await account.balance()).toBe(9);
    const [request] = ocrRequests();
    // Issue 29 point 8: the file itself as the body (not base64 JSON), the options in the query.
    expect(request!.headers.get("content-type")).toBe("application/octet-stream");
    expect(request!.search).toBe("?format=text");
    expect(request!.raw.equals(fs.readFileSync(PNG))).toBe(true);
    expect(request!.headers.get("x-api-key")).toBe(account.key);
    expect(request!.headers.get("idempotency-key")).toMatch(/^[0-9a-f-]{36}$/);
    expect(request!.headers.get("user-agent")).toMatch(/^ocr-cli\/\S+ node\//);
  });

  it("json: a PNG, whose output parses as the document", async () => {
    const account = await createAccount(10);
    const run = await ocr(["extract", PNG, "--format", "json"], account.key);
    expect(run.code).toBe(0);
    const document = ocrDocumentSchema.parse(JSON.parse(run.stdout));
    expect(document.pages).toHaveLength(1);
    expect(characterErrorRate(document.pages[0]!.text, groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);
  });

  it("markdown: a PNG", async () => {
    const account = await createAccount(10);
    const run = await ocr(["extract", PNG, "-f", "markdown"], account.key);
    expect(run.code).toBe(0);
    expect(characterErrorRate(unmark(run.stdout), groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);
  });

  it("text: a 3-page PDF, pages separated by form feeds, charged 3", async () => {
    const account = await createAccount(10);
    const run = await ocr(["extract", PDF], account.key);
    expect(run.code).toBe(0);
    expect(run.stdout.split("\f")).toHaveLength(3);
    expect(characterErrorRate(run.stdout, groundTruth("born-digital.pdf"))).toBeLessThan(PDF_CER);
    expect(await account.balance()).toBe(7);
  });

  it("json: a PDF, its text-layer pages", async () => {
    const account = await createAccount(10);
    const run = await ocr(["extract", PDF, "--format=json"], account.key);
    expect(run.code).toBe(0);
    const document = ocrDocumentSchema.parse(JSON.parse(run.stdout));
    expect(document.pages.map((page) => page.source)).toEqual(["text-layer", "text-layer", "text-layer"]);
    const text = document.pages.map((page) => page.text).join("\n");
    expect(characterErrorRate(text, groundTruth("born-digital.pdf"))).toBeLessThan(PDF_CER);
  });

  it("markdown: a PDF, with headings and page rules", async () => {
    const account = await createAccount(10);
    const run = await ocr(["extract", PDF, "--format", "markdown"], account.key);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^#+ Introduction$/m);
    expect(run.stdout.split("\n\n---\n\n")).toHaveLength(3);
    expect(characterErrorRate(unmark(run.stdout), groundTruth("born-digital.pdf"))).toBeLessThan(PDF_CER);
  });

  it("--pages and --lang reach the service: page 2 only, charged 1", async () => {
    const account = await createAccount(10);
    const run = await ocr(["extract", PDF, "--pages", "2", "--lang", "eng", "--verbose"], account.key);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("The second page describes the methods.");
    expect(run.stdout).not.toContain("Introduction");
    expect(Object.fromEntries(new URLSearchParams(ocrRequests()[0]!.search))).toEqual({
      format: "text",
      pages: "2",
      language: "eng",
    });
    expect(await account.balance()).toBe(9);
    // --verbose: what was charged and what is left, on stderr.
    expect(run.stderr).toMatch(/born-digital\.pdf: 1 credit used, 9 remaining, confidence 100\.0, \d+ ms/);
  });

  it("stdin: `-` reads the file from standard input", async () => {
    const account = await createAccount(10);
    const run = await runCli(cli.path, ["extract", "-"], {
      stdin: fs.readFileSync(PNG),
      env: { OCR_BASE_URL: server.current.baseUrl, OCR_API_KEY: account.key },
    });
    expect(run.code).toBe(0);
    expect(characterErrorRate(run.stdout, groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);
  });
});

describe("ocr extract: the searchable PDF and the word formats", () => {
  it("--format pdf -o out.pdf writes the PDF itself (binary), its text layer the page's words", async () => {
    const account = await createAccount(10);
    const file = path.join(tempDir("pdf"), "out.pdf");
    const run = await ocr(["extract", PNG, "--format", "pdf", "-o", file], account.key);
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe("");
    expect(run.code).toBe(0);
    const pdf = fs.readFileSync(file);
    expect(pdf.subarray(0, 5).toString("latin1")).toBe("%PDF-");
    expect(spawnSync("qpdf", ["--check", file]).status).toBe(0);
    const text = execFileSync("pdftotext", ["-raw", file, "-"], { encoding: "utf8" });
    expect(characterErrorRate(text, groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);
    expect(await account.balance()).toBe(9);
  });

  it("--format tsv, hocr and alto to stdout", async () => {
    const account = await createAccount(10);
    const tsv = await ocr(["extract", PNG, "--format", "tsv"], account.key);
    expect(tsv.code).toBe(0);
    expect(tsv.stdout.split("\n")[0]).toBe(
      "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext",
    );
    const hocr = await ocr(["extract", PNG, "--format", "hocr"], account.key);
    expect(hocr.stdout).toMatch(/class="ocrx_word"[^>]*>Optical</);
    const alto = await ocr(["extract", PNG, "--format", "alto"], account.key);
    expect(alto.stdout).toMatch(/<String ID="word_1_1" CONTENT="Optical"/);
  });
});

describe("ocr extract: several files", () => {
  it("writes <name>.<ext> for each into --out (created), nothing on stdout, no progress bar off a terminal", async () => {
    const account = await createAccount(10);
    const out = path.join(tempDir("out"), "nested", "dir");
    const run = await ocr(["extract", PNG, PDF, "--format", "markdown", "--out", out], account.key);
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe("");
    expect(run.code).toBe(0);
    expect(fs.readdirSync(out).sort()).toEqual(["born-digital.md", "paragraph.md"]);
    expect(
      characterErrorRate(unmark(fs.readFileSync(path.join(out, "paragraph.md"), "utf8")), groundTruth("paragraph.png")),
    ).toBeLessThan(IMAGE_CER);
    expect(
      characterErrorRate(
        unmark(fs.readFileSync(path.join(out, "born-digital.md"), "utf8")),
        groundTruth("born-digital.pdf"),
      ),
    ).toBeLessThan(PDF_CER);
    expect(await account.balance()).toBe(6);
    // One Idempotency-Key per file.
    const keys = ocrRequests().map((request) => request.headers.get("idempotency-key"));
    expect(new Set(keys).size).toBe(2);
  });

  it("defaults to the working directory; a name used twice in a run gets -2", async () => {
    const account = await createAccount(10);
    const cwd = tempDir("cwd");
    const run = await ocr(["extract", PNG, PNG], account.key, { cwd });
    expect(run.code).toBe(0);
    expect(fs.readdirSync(cwd).sort()).toEqual(["paragraph-2.txt", "paragraph.txt"]);
    expect(fs.readFileSync(path.join(cwd, "paragraph.txt"), "utf8")).toBe(
      fs.readFileSync(path.join(cwd, "paragraph-2.txt"), "utf8"),
    );
  });

  it("a failing file does not stop the others; the exit code is the first failure's", async () => {
    const account = await createAccount(10);
    const cwd = tempDir("mixed");
    fs.writeFileSync(path.join(cwd, "notes.txt"), "plain text is not an image");
    const run = await ocr(["extract", "notes.txt", PNG, "missing.png"], account.key, { cwd });
    expect(run.code).toBe(5);
    expect(run.stderr).toMatch(/^ocr: notes\.txt: unsupported_media_type: .+ \(request req_[\w-]+\)$/m);
    expect(run.stderr).toMatch(/^ocr: missing\.png: no such file$/m);
    expect(run.stderr).toMatch(/1 of 3 written to /);
    expect(fs.readdirSync(cwd).sort()).toEqual(["notes.txt", "paragraph.txt"]);
    expect(await account.balance()).toBe(9);
  });
});

describe("ocr extract: files as they are (issue 29 point 8)", () => {
  it("a 3.7 MB phone photo (over the old 3 MiB inline limit) goes as the raw body and is read: one credit", async () => {
    const account = await createAccount(5);
    const photo = path.join(tempDir("photo"), "photo.jpg");
    fs.writeFileSync(photo, await phonePhoto());
    const run = await ocr(["extract", photo], account.key);
    expect(run.code, run.stderr).toBe(0);
    expect(characterErrorRate(run.stdout, groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);
    const [request] = ocrRequests();
    expect(request!.raw.byteLength).toBeGreaterThan(3.5e6);
    expect(request!.headers.get("content-type")).toBe("application/octet-stream");
    expect(await account.balance()).toBe(4);
  });

  it("a service from before raw bodies (415 asking for JSON): the file goes again as base64, under a new Idempotency-Key", async () => {
    const account = await createAccount(5);
    server.current.intercept = (request) =>
      request.path === "/api/ocr/process" && request.headers.get("content-type") === "application/octet-stream"
        ? Response.json(
            {
              success: false,
              error: {
                code: "unsupported_media_type",
                message:
                  "Send the request body as JSON with Content-Type: application/json (got application/octet-stream)",
              },
              requestId: "req_old",
            },
            { status: 415 },
          )
        : undefined;
    const run = await ocr(["extract", PNG], account.key);
    expect(run.code, run.stderr).toBe(0);
    expect(characterErrorRate(run.stdout, groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);
    const [raw, json] = ocrRequests();
    expect(ocrRequests()).toHaveLength(2);
    expect(JSON.parse(json!.body)).toEqual({
      image: fs.readFileSync(PNG).toString("base64"),
      options: { format: "text" },
    });
    expect(json!.headers.get("idempotency-key")).not.toBe(raw!.headers.get("idempotency-key"));
    expect(await account.balance()).toBe(4);
  });
});

describe("ocr extract: refusals and errors", () => {
  it("a local file over the inline limit is refused with exit code 5, a hint to pass a URL, and no request", async () => {
    const account = await createAccount(10);
    const dir = tempDir("big");
    const big = path.join(dir, "big-scan.pdf");
    fs.writeFileSync(big, Buffer.alloc(20 * 1024 * 1024 + 1, 0x20));
    const run = await ocr(["extract", big], account.key);
    expect(run.code).toBe(5);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain("too large to send inline (the limit is 20.0 MiB)");
    expect(run.stderr).toContain("public http(s) URL");
    expect(run.stderr).toContain("ocr extract https://example.com/big-scan.pdf");
    expect(run.stderr).toContain("never uploads");
    expect(server.current.requests).toEqual([]);
  });

  it("a URL goes as imageUrl; the service's refusal of a loopback address is exit code 5", async () => {
    const account = await createAccount(10);
    const run = await ocr(["extract", "http://127.0.0.1:9/scan.png"], account.key);
    expect(JSON.parse(ocrRequests()[0]!.body)).toEqual({
      imageUrl: "http://127.0.0.1:9/scan.png",
      options: { format: "text" },
    });
    expect(run.code).toBe(5);
    expect(run.stderr).toMatch(/^ocr: http:\/\/127\.0\.0\.1:9\/scan\.png: invalid_request: .+\(request req_[\w-]+\)$/m);
  });

  it("402: too few credits → exit code 4 with the service's code and message; nothing charged", async () => {
    const account = await createAccount(2);
    const run = await ocr(["extract", PDF], account.key);
    expect(run.code).toBe(4);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(
      /^ocr: .*born-digital\.pdf: insufficient_credits: Insufficient credits: this request needs 3 credits \(3 pages\) and the balance is 2 \(request req_[\w-]+\)$/m,
    );
    expect(await account.balance()).toBe(2);
  });

  it("402 stops a run of several files: the rest are not sent", async () => {
    const account = await createAccount(2);
    const cwd = tempDir("stop");
    const run = await ocr(["extract", PDF, PNG, PNG, "--concurrency", "1"], account.key, { cwd });
    expect(run.code).toBe(4);
    expect(run.stderr).toMatch(/stopped after insufficient_credits: 2 inputs not sent/);
    expect(ocrRequests()).toHaveLength(1);
    expect(fs.readdirSync(cwd)).toEqual([]);
  });

  it("401: a wrong key → exit code 3 with the service's message; the key is never printed", async () => {
    const key = "ocr_wrong0000000000000000000000000000000000";
    const run = await ocr(["extract", PNG], key);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(
      /^ocr: .*paragraph\.png: unauthorized: Invalid or revoked API key \(request req_[\w-]+\)$/m,
    );
    expect(run.stderr + run.stdout).not.toContain(key);
  });

  it("no key configured → exit code 3 before any request, naming FETCH_MCP_SERVER_API_KEY", async () => {
    const run = await ocr(["extract", PNG], undefined);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain("FETCH_MCP_SERVER_API_KEY");
    expect(server.current.requests).toEqual([]);
  });

  it("--api-key is used when given explicitly", async () => {
    const account = await createAccount(10);
    const run = await ocr(["extract", PNG, "--api-key", account.key], undefined);
    expect(run.code).toBe(0);
    expect(await account.balance()).toBe(9);
  });

  it("usage errors → exit code 2", async () => {
    for (const args of [
      ["extract"],
      ["extract", PNG, "--format", "docx"],
      ["extract", PNG, "--pages", "one"],
      ["extract", PNG, "--bogus"],
      ["extract", PNG, "--timeout", "soon"],
      ["balance", "--format", "json"],
      ["frobnicate"],
      [],
    ]) {
      const run = await ocr(args, "ocr_unused");
      expect({ args, code: run.code }).toEqual({ args, code: 2 });
      expect(run.stderr).toMatch(/ocr|Usage/);
    }
    expect(server.current.requests).toEqual([]);
  });

  it("no service at the base URL → exit code 1 after the retries, naming the URL", async () => {
    const base = `http://127.0.0.1:${await unusedPort()}`;
    const run = await runCli(cli.path, ["extract", PNG, "--retries", "1"], {
      env: { OCR_BASE_URL: base, FETCH_MCP_SERVER_API_KEY: "ocr_unused" },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `paragraph.png: no answer from ${base} (network error ECONNREFUSED: connect ECONNREFUSED`,
    );
    expect(run.stderr).toContain(`, 2 attempts) — is the service running at ${base}?`);
  });
});

describe("ocr extract: retries", () => {
  it("503 with Retry-After: 1 once → waits, retries with the same Idempotency-Key, charged once", async () => {
    const account = await createAccount(10);
    let refused = 0;
    server.current.intercept = (request) => {
      if (request.path !== "/api/ocr/process" || refused > 0) return undefined;
      refused += 1;
      return Response.json(
        { success: false, error: { code: "overloaded", message: "The OCR queue is full" }, requestId: "req_injected" },
        { status: 503, headers: { "retry-after": "1" } },
      );
    };
    const started = Date.now();
    const run = await ocr(["extract", PNG, "--verbose"], account.key);
    expect(run.code).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(characterErrorRate(run.stdout, groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);
    const attempts = ocrRequests();
    expect(attempts.map((request) => request.status)).toEqual([503, 200]);
    expect(attempts[1]!.headers.get("idempotency-key")).toBe(attempts[0]!.headers.get("idempotency-key"));
    expect(attempts[1]!.body).toBe(attempts[0]!.body);
    expect(run.stderr).toMatch(/HTTP 503 overloaded; retrying in 1\.0 s/);
    expect(await account.balance()).toBe(9);
    await expectLedgerConsistent(account);
  });

  it("an answer lost on the way (connection dropped after the work) → the retry replays it, charged once", async () => {
    const account = await createAccount(10);
    let dropped = false;
    server.current.intercept = (request) => {
      if (request.path !== "/api/ocr/process" || dropped) return undefined;
      dropped = true;
      // Do the work (and the charge) with the real route, then lose the answer.
      void import("@/app/api/ocr/process/route").then((route) =>
        route.POST(
          new Request(`${server.current.baseUrl}/api/ocr/process${request.search}`, {
            method: "POST",
            headers: request.headers,
            body: new Uint8Array(request.raw),
          }),
        ),
      );
      return "drop";
    };
    const run = await ocr(["extract", PNG, "--verbose"], account.key);
    expect(run.code).toBe(0);
    expect(characterErrorRate(run.stdout, groundTruth("paragraph.png"))).toBeLessThan(IMAGE_CER);
    const keys = ocrRequests().map((request) => request.headers.get("idempotency-key"));
    expect(keys.length).toBeGreaterThanOrEqual(2);
    expect(new Set(keys).size).toBe(1);
    expect(run.stderr).toMatch(/network error/);
    expect(await account.balance()).toBe(9);
    await expectLedgerConsistent(account);
  });

  it("429 on every attempt → gives up after 3 retries with exit code 1 and the service's message", async () => {
    const account = await createAccount(10);
    server.current.intercept = (request) =>
      request.path === "/api/ocr/process"
        ? Response.json(
            {
              success: false,
              error: { code: "rate_limited", message: "Rate limit exceeded" },
              requestId: "req_injected",
            },
            { status: 429, headers: { "retry-after": "0" } },
          )
        : undefined;
    const run = await ocr(["extract", PNG], account.key);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/rate_limited: Rate limit exceeded \(request req_injected\)/);
    expect(ocrRequests()).toHaveLength(4);
    expect(await account.balance()).toBe(10);
  });
});

describe("ocr balance", () => {
  it("prints the balance of the key's account", async () => {
    const account = await createAccount(42);
    const run = await ocr(["balance"], account.key);
    expect(run).toEqual({ code: 0, stdout: "42\n", stderr: "" });
  });

  it("401 → exit code 3", async () => {
    const run = await ocr(["balance"], "ocr_wrong0000000000000000000000000000000000");
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/unauthorized: Invalid or revoked API key/);
  });

  it("a server without GET /api/credits → exit code 1 and where else to look", async () => {
    const account = await createAccount(1);
    server.current.intercept = (request) =>
      request.path === "/api/credits"
        ? new Response("<!DOCTYPE html>Not found", { status: 404, headers: { "content-type": "text/html" } })
        : undefined;
    const run = await ocr(["balance"], account.key);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("no balance endpoint");
    expect(run.stderr).toContain("/settings");
  });
});
