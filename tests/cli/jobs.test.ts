import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import * as resultRoute from "@/app/api/ocr/jobs/[id]/result/route";
import { characterErrorRate } from "@/bench/metrics";
import { jobListSchema, jobResultSchema, jobViewSchema } from "@/lib/api/schemas";
import { ensureJobRunner, getJobView, resetWorkQueue, stopJobRunner } from "@/lib/jobs";
import { ocrDocumentSchema } from "@/lib/ocr/model";
import { longScan } from "@/scripts/make-fixtures";
import {
  FIXTURE_DIR,
  createAccount,
  expectLedgerConsistent,
  groundTruth,
  withStore,
  type TestAccount,
} from "../api/support";
import { runCli, withBuiltCli, withTempDirs, withTestServer, type CliRun } from "./support";
import { getStore } from "@/lib/store";
import { getEnv } from "@/lib/env";
import { withEnv } from "../support/env";
import { services } from "@/lib/services";

/*
 * Asynchronous jobs from the command line: the bundled CLI in a child process against the real route handlers (the
 * job routes too) and a job runner in this process (memory store and queue, the real engine). The synchronous limit
 * is lowered to 3 pages that need OCR, so a generated 6-page scan is past it and small enough to read quickly.
 */

const SYNC_PAGES = 3;
const PAGES = 6;
/** A long job: still running when it is cancelled or interrupted. */
const LONG_PAGES = 16;
const SCAN_CER = 0.05;
const PNG = path.join(FIXTURE_DIR, "paragraph.png");

withStore("memory", { MAX_PDF_PAGES: String(SYNC_PAGES) });
const cli = withBuiltCli();
const server = withTestServer();
const tempDir = withTempDirs();

let scan: { file: string; truth: string[] };
let longFile: string;

beforeAll(async () => {
  ensureJobRunner(services());
  const dir = tempDir("scans");
  const [short, long] = await Promise.all([longScan(PAGES), longScan(LONG_PAGES)]);
  scan = { file: path.join(dir, "contract.pdf"), truth: short.truth };
  fs.writeFileSync(scan.file, short.pdf);
  longFile = path.join(dir, "book.pdf");
  fs.writeFileSync(longFile, long.pdf);
});

afterAll(async () => {
  await stopJobRunner();
  await resetWorkQueue();
});

afterEach(() => {
  server.current.intercept = undefined;
  server.current.requests.length = 0;
});

function ocr(args: string[], key: string | undefined, options: { cwd?: string } = {}): Promise<CliRun> {
  return runCli(cli.path, args, {
    cwd: options.cwd,
    env: { OCR_BASE_URL: server.current.baseUrl, FETCH_MCP_SERVER_API_KEY: key },
    timeoutMs: 120_000,
  });
}

const requestLine = (request: { method: string; path: string; status: number }) =>
  `${request.method} ${request.path.replace(/job_[\w-]{22}/, "{id}")} ${request.status}`;

/** The requests of the last run, polls of the status route collapsed into one line. */
function requestSequence(): string[] {
  const lines = server.current.requests.map(requestLine);
  return lines.filter((line, i) => !(line.startsWith("GET /api/ocr/jobs/{id} ") && lines[i - 1] === line));
}

/** A child's whole environment: PATH, the service and the key. */
const childEnv = (key: string): NodeJS.ProcessEnv => {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    OCR_BASE_URL: server.current.baseUrl,
    FETCH_MCP_SERVER_API_KEY: key,
  };
  return env as NodeJS.ProcessEnv;
};

const jobIdIn = (text: string) => /job_[\w-]{22}/.exec(text)?.[0] ?? "";

/** Submit the long scan as a job straight through the API (as another client of the account would). */
async function submitLong(account: TestAccount): Promise<string> {
  const response = await fetch(`${server.current.baseUrl}/api/ocr/jobs`, {
    method: "POST",
    headers: { "x-api-key": account.key, "content-type": "application/json" },
    body: JSON.stringify({ image: fs.readFileSync(longFile).toString("base64") }),
  });
  expect(response.status).toBe(202);
  return jobViewSchema.parse(await response.json()).jobId;
}

describe("ocr extract: a document past the synchronous limits becomes a job", () => {
  it("asked with Prefer: respond-async, wait=25 the service answers 202 with a job at once; waited for, its text on stdout, charged per page", async () => {
    const account = await createAccount(20);
    const run = await ocr(["extract", scan.file], account.key);
    expect(run.code, run.stderr).toBe(0);
    const pages = run.stdout.replace(/\n$/, "").split("\f");
    expect(pages).toHaveLength(PAGES);
    for (const [i, page] of pages.entries()) {
      expect(page).toContain(`Page ${i + 1} of ${PAGES}`);
      expect(characterErrorRate(page, scan.truth[i]!)).toBeLessThan(SCAN_CER);
    }
    // One request: the service made it a job (issue 39 item 3: never a synchronous read the CLI gives up on); then
    // the job polled until it ended, its result read.
    expect(requestSequence()).toEqual([
      "POST /api/ocr/process 202",
      "GET /api/ocr/jobs/{id} 200",
      "GET /api/ocr/jobs/{id}/result 200",
    ]);
    expect(server.current.requests[0]!.headers.get("prefer")).toBe("respond-async, wait=25");
    expect(server.current.requests[0]!.headers.get("idempotency-key")).toMatch(/^[0-9a-f-]{36}$/);
    // Off a terminal: no bar, plain lines naming the job.
    const jobId = jobIdIn(run.stderr);
    expect(run.stderr).toMatch(
      new RegExp(
        `contract\\.pdf: too long to read within 25 s, the service answered with a job: job ${jobId} \\(6 pages, 6 credits reserved\\)`,
      ),
    );
    expect(run.stderr).not.toContain("\r");
    expect(await account.balance()).toBe(20 - PAGES);
    await expectLedgerConsistent(account);
    expect(await getJobView(getStore(), getEnv(), services().deliveries, account.userId, jobId)).toMatchObject({
      status: "succeeded",
      pagesDone: PAGES,
      creditsUsed: PAGES,
    });
  });

  it("--async sends even a one-page image as a job; --format json and --verbose", async () => {
    const account = await createAccount(5);
    const run = await ocr(["extract", PNG, "--async", "--format", "json", "--verbose"], account.key);
    expect(run.code, run.stderr).toBe(0);
    const document = ocrDocumentSchema.parse(JSON.parse(run.stdout));
    expect(document.pages).toHaveLength(1);
    expect(characterErrorRate(document.pages[0]!.text, groundTruth("paragraph.png"))).toBeLessThan(SCAN_CER);
    expect(server.current.requests.some((request) => request.path === "/api/ocr/process")).toBe(false);
    expect(server.current.requests[0]!.search).toBe("?format=json");
    expect(run.stderr).toMatch(
      /paragraph\.png: job job_[\w-]{22}, 1\/1 pages, 1 credit used, confidence \d+\.\d, \d+\.\d s/,
    );
    expect(await account.balance()).toBe(4);
  });

  it("--async --format pdf -o FILE.pdf: the job's searchable PDF, downloaded whole; `jobs result --format pdf` too", async () => {
    const account = await createAccount(5);
    const dir = tempDir("pdf");
    const file = path.join(dir, "scan.pdf");
    const run = await ocr(["extract", PNG, "--async", "--format", "pdf", "-o", file, "--verbose"], account.key);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("");
    const pdf = fs.readFileSync(file);
    expect(pdf.subarray(0, 5).toString("latin1")).toBe("%PDF-");
    const text = execFileSync("pdftotext", ["-raw", file, "-"], { encoding: "utf8" });
    expect(characterErrorRate(text, groundTruth("paragraph.png"))).toBeLessThan(SCAN_CER);
    expect(server.current.requests.at(-1)!.search).toBe("?format=pdf");
    const jobId = /job (job_[\w-]{22})/.exec(run.stderr)![1]!;
    const again = await ocr(["jobs", "result", jobId, "-o", path.join(dir, "again.pdf")], account.key);
    expect(again.code, again.stderr).toBe(0);
    expect(fs.readFileSync(path.join(dir, "again.pdf")).equals(pdf)).toBe(true);
    expect(await account.balance()).toBe(4);
  });

  it("--sync: the 413 is the answer (exit code 5), no job", async () => {
    const account = await createAccount(20);
    const run = await ocr(["extract", scan.file, "--sync"], account.key);
    expect(run.code).toBe(5);
    expect(run.stderr).toMatch(/contract\.pdf: payload_too_large: .*POST \/api\/ocr\/jobs/);
    expect(requestSequence()).toEqual(["POST /api/ocr/process 413"]);
    expect(await account.balance()).toBe(20);
  });

  it("the service's 504 timeout → a job at once (not retried); a URL over the request's download limit → a job", async () => {
    const account = await createAccount(5);
    server.current.intercept = (request) =>
      request.path === "/api/ocr/process"
        ? Response.json(
            {
              success: false,
              error: { code: "timeout", message: "The request deadline passed" },
              requestId: "req_injected",
            },
            { status: 504 },
          )
        : undefined;
    const slow = await ocr(["extract", PNG], account.key);
    expect(slow.code, slow.stderr).toBe(0);
    expect(characterErrorRate(slow.stdout, groundTruth("paragraph.png"))).toBeLessThan(SCAN_CER);
    expect(requestSequence().slice(0, 2)).toEqual(["POST /api/ocr/process 504", "POST /api/ocr/jobs 202"]);
    expect(slow.stderr).toContain("paragraph.png: not read within one request's deadline (504): sent as job");
    server.current.requests.length = 0;

    const url = "http://127.0.0.1:9/big-scan.pdf";
    server.current.intercept = (request) =>
      request.path === "/api/ocr/process"
        ? Response.json(
            {
              success: false,
              error: {
                code: "payload_too_large",
                message: "The file at imageUrl is larger than the 25 MB limit for URL files",
              },
              requestId: "req_injected",
            },
            { status: 413 },
          )
        : undefined;
    const big = await ocr(["extract", url], account.key);
    // The job route fetches it itself, and refuses this loopback address: the answer to the job is the one reported.
    expect(requestSequence()).toEqual(["POST /api/ocr/process 413", "POST /api/ocr/jobs 400"]);
    expect(JSON.parse(server.current.requests[1]!.body)).toEqual({ imageUrl: url, options: { format: "text" } });
    expect(big.code).toBe(5);
    expect(big.stderr).toMatch(/big-scan\.pdf: invalid_request: /);
  });

  it("a 12-page scan (issue 39 item 3): a job from one request, never a read given up on and resent", async () => {
    // The time path of the service's decision: fewer pages than the synchronous limit, but expected past the wait.
    const account = await createAccount(20);
    const dir = tempDir("twelve");
    const twelve = path.join(dir, "twelve.pdf");
    fs.writeFileSync(twelve, (await longScan(12)).pdf);
    const run = await withEnv({ MAX_PDF_PAGES: "50" }, () => ocr(["extract", twelve, "--timeout", "10s"], account.key));
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.replace(/\n$/, "").split("\f")).toHaveLength(12);
    expect(requestSequence().slice(0, 2)).toEqual(["POST /api/ocr/process 202", "GET /api/ocr/jobs/{id} 200"]);
    expect(server.current.requests[0]!.headers.get("prefer")).toBe("respond-async, wait=5");
    expect(run.stderr).toMatch(/twelve\.pdf: too long to read within 5 s, the service answered with a job: job job_/);
    expect(await account.balance()).toBe(20 - 12);
  });

  it("no answer within --timeout: not resent, said as it is (not 'is the service running?'); auto → a job, --sync → exit 1", async () => {
    const account = await createAccount(5);
    // The synchronous read never answers while the CLI waits (answered, to no one, at the end of the test).
    const stalled: Array<() => void> = [];
    const stall = () =>
      new Promise<Response>((resolve) => stalled.push(() => resolve(new Response(null, { status: 500 }))));
    server.current.intercept = (request) => (request.path === "/api/ocr/process" ? stall() : undefined);
    onTestFinished(() => stalled.forEach((answer) => answer()));
    // A timeout under 10 s is stretched to the shortest wait (5 s) and its margin: one attempt of 10 s.
    const auto = await ocr(["extract", PNG, "--timeout", "2s"], account.key);
    expect(auto.code, auto.stderr).toBe(0);
    expect(characterErrorRate(auto.stdout, groundTruth("paragraph.png"))).toBeLessThan(SCAN_CER);
    expect(requestSequence().slice(0, 2)).toEqual(["POST /api/ocr/process 0", "POST /api/ocr/jobs 202"]);
    expect(auto.stderr).toContain("paragraph.png: no answer within 10 s: sent as job");
    server.current.requests.length = 0;

    const sync = await ocr(["extract", PNG, "--sync", "--timeout", "2s"], account.key);
    expect(sync.code).toBe(1);
    expect(requestSequence()).toEqual(["POST /api/ocr/process 0"]);
    expect(server.current.requests[0]!.headers.get("prefer")).toBe("wait=5");
    expect(sync.stderr).toMatch(/no answer from http:\/\/127\.0\.0\.1:\d+ within 10 s \(--timeout\)/);
    expect(sync.stderr).toContain("drop --sync");
    expect(sync.stderr).not.toContain("is the service running");
    expect(await account.balance()).toBe(4);
  });

  it("follows `next`: a result in two parts is joined into one text", async () => {
    const account = await createAccount(20);
    // The first result request is answered with pages 1-3 only and a `next` for 4-6 (as a result over ~4 MB is).
    server.current.intercept = async (request) => {
      if (!request.path.endsWith("/result") || request.search !== "") return undefined;
      const url = `${server.current.baseUrl}${request.path}?pages=1-3`;
      const part = jobResultSchema.parse(
        await (await resultRoute.GET(new Request(url, { headers: request.headers }))).json(),
      );
      return Response.json({ ...part, next: `${request.path}?format=text&pages=4-6` });
    };
    const run = await ocr(["extract", scan.file, "--async", "--verbose"], account.key);
    expect(run.code, run.stderr).toBe(0);
    const results = server.current.requests.filter((request) => request.path.endsWith("/result"));
    expect(results.map((request) => request.search)).toEqual(["", "?format=text&pages=4-6"]);
    const pages = run.stdout.replace(/\n$/, "").split("\f");
    expect(pages.map((page) => /Page (\d) of 6/.exec(page)?.[1])).toEqual(["1", "2", "3", "4", "5", "6"]);
    expect(characterErrorRate(pages.join("\n"), scan.truth.join("\n"))).toBeLessThan(SCAN_CER);
    expect(run.stderr).toContain("2 parts");
  });

  it("Ctrl-C while waiting: names the job and how to get its result; the job is not cancelled", async () => {
    const account = await createAccount(LONG_PAGES);
    const child = spawn(process.execPath, [cli.path, "extract", longFile, "--async"], {
      cwd: os.tmpdir(),
      env: childEnv(account.key),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    const submitted = new Promise<void>((resolve) =>
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        stderr += chunk;
        if (stderr.includes("sent as job")) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    await submitted;
    child.kill("SIGINT");
    expect(await exited).toBe(130);
    const jobId = jobIdIn(stderr);
    expect(stderr).toContain(`book.pdf: interrupted; job ${jobId} goes on at the service`);
    expect(stderr).toContain(`\`ocr jobs result ${jobId}\``);
    expect(stderr).toContain(`\`ocr jobs cancel ${jobId}\``);
    expect(stdout).toBe("");
    expect(server.current.requests.some((request) => request.method === "DELETE")).toBe(false);
    const view = await getJobView(getStore(), getEnv(), services().deliveries, account.userId, jobId);
    expect(view.status).not.toBe("cancelled");

    // Later: `ocr jobs result` waits for it to end and writes the whole text.
    const out = tempDir("later");
    const later = await ocr(["jobs", "result", jobId, "-o", `${out}/`], account.key);
    expect(later.code, later.stderr).toBe(0);
    const text = fs.readFileSync(path.join(out, `${jobId}.txt`), "utf8");
    expect(text.split("\f")).toHaveLength(LONG_PAGES);
    expect(text).toContain(`Page ${LONG_PAGES} of ${LONG_PAGES}`);
    expect(later.stderr).toContain(`written to ${path.join(out, `${jobId}.txt`)}`);
    expect(await account.balance()).toBe(0);
    await expectLedgerConsistent(account);
  }, 180_000);

  it("on a terminal: a bar of pages read on stderr", async () => {
    const account = await createAccount(20);
    // `script` gives the CLI a pseudo-terminal (stdout and stderr both land in it).
    const command = [process.execPath, cli.path, "extract", scan.file].map((arg) => `'${arg}'`).join(" ");
    const run = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn("script", ["-qefc", command, "/dev/null"], {
        env: childEnv(account.key),
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
      child.on("close", (code) => resolve({ code, output }));
    });
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/\r\x1b\[2K\[[#-]+\] [ \d]\d?\/6 pages {2}.*contract\.pdf/);
    expect(run.output).toMatch(/\r\x1b\[2K\[#+\] 6\/6 pages/);
    expect(run.output).toContain("Page 6 of 6");
  });
});

describe("ocr jobs", () => {
  let account: TestAccount;
  let jobId: string;

  beforeAll(async () => {
    account = await createAccount(100);
    const run = await ocr(["extract", scan.file, "--async"], account.key);
    expect(run.code, run.stderr).toBe(0);
    jobId = jobIdIn(run.stderr);
  });

  it("list: the account's jobs, newest first, as a table or as the service's JSON", async () => {
    const other = await createAccount(10);
    await ocr(["extract", PNG, "--async"], other.key);
    const table = await ocr(["jobs", "list"], account.key);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^JOB\s+STATUS\s+PAGES\s+CREDITS\s+CREATED$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(
      new RegExp(`^${jobId}\\s+succeeded\\s+6/6\\s+6/6\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ$`),
    );

    const json = await ocr(["jobs", "list", "--json", "--limit", "5"], account.key);
    expect(json.code).toBe(0);
    const list = jobListSchema.parse(JSON.parse(json.stdout));
    expect(list.jobs.map((job) => job.jobId)).toEqual([jobId]);
    expect(server.current.requests.at(-1)!.search).toBe("?limit=5");
  });

  it("list --limit 1 with more jobs: says the --cursor for older ones", async () => {
    const busy = await createAccount(10);
    await ocr(["extract", PNG, "--async"], busy.key);
    await ocr(["extract", PNG, "--async"], busy.key);
    const run = await ocr(["jobs", "list", "--limit", "1"], busy.key);
    expect(run.code).toBe(0);
    expect(run.stdout.trimEnd().split("\n")).toHaveLength(2);
    const cursor = /ocr jobs list --cursor (\d+)/.exec(run.stderr)?.[1];
    expect(cursor).toBeDefined();
    const older = await ocr(["jobs", "list", "--limit", "1", "--cursor", cursor!], busy.key);
    expect(older.stdout.trimEnd().split("\n")).toHaveLength(2);
    expect(jobIdIn(older.stdout)).not.toBe(jobIdIn(run.stdout));
  });

  it("get: status, pages, credits; --json is the job as the service answers it", async () => {
    const run = await ocr(["jobs", "get", jobId], account.key);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`job:      ${jobId}`);
    expect(run.stdout).toMatch(/^status: +succeeded$/m);
    expect(run.stdout).toMatch(/^pages: +6 read, 0 failed, of 6 \(the file has 6\)$/m);
    expect(run.stdout).toMatch(/^credits: +6 used, 6 reserved, 0 refunded$/m);
    expect(run.stdout).toContain(`ocr jobs result ${jobId}`);
    const json = await ocr(["jobs", "get", jobId, "--json"], account.key);
    expect(jobViewSchema.parse(JSON.parse(json.stdout))).toMatchObject({
      jobId,
      status: "succeeded",
      pagesDone: 6,
      failedPages: [],
    });
  });

  it("result: the whole text; --pages, --format and -o FILE", async () => {
    const whole = await ocr(["jobs", "result", jobId], account.key);
    expect(whole.code).toBe(0);
    expect(whole.stderr).toBe("");
    expect(characterErrorRate(whole.stdout.split("\f").join("\n"), scan.truth.join("\n"))).toBeLessThan(SCAN_CER);

    const file = path.join(tempDir("result"), "sub", "two.md");
    const part = await ocr(
      ["jobs", "result", jobId, "--pages", "2-3", "--format", "markdown", "-o", file],
      account.key,
    );
    expect(part.code, part.stderr).toBe(0);
    expect(part.stdout).toBe("");
    const markdown = fs.readFileSync(file, "utf8");
    expect(markdown.split("\n\n---\n\n")).toHaveLength(2);
    expect(markdown).toContain("Page 2 of 6");
    expect(markdown).toContain("Page 3 of 6");
    expect(markdown).not.toContain("Page 4 of 6");
    expect(server.current.requests.at(-1)!.search).toBe("?format=markdown&pages=2-3");
    // Reading results costs nothing.
    expect(await account.balance()).toBe(100 - PAGES);
  });

  it("cancel: a running job stops, its unread pages are refunded; cancelling an ended job says so", async () => {
    const before = await account.balance();
    const running = await submitLong(account);
    const run = await ocr(["jobs", "cancel", running], account.key);
    expect(run.code, run.stderr).toBe(0);
    const view = await getJobView(getStore(), getEnv(), services().deliveries, account.userId, running);
    expect(view.status).toBe("cancelled");
    expect(view.pagesDone).toBeLessThan(LONG_PAGES);
    expect(run.stdout).toBe(
      `${running} cancelled: ${view.pagesDone}/${LONG_PAGES} pages read, ${LONG_PAGES - view.pagesDone} credits refunded${view.pagesDone > 0 ? ` (its text so far: ocr jobs result ${running})` : ""}\n`,
    );
    expect(view.creditsRefunded).toBe(LONG_PAGES - view.pagesDone);
    expect(await account.balance()).toBe(before - view.pagesDone);
    await expectLedgerConsistent(account);
    const deletes = server.current.requests.filter((request) => request.method === "DELETE");
    expect(deletes).toHaveLength(1);
    expect(deletes[0]!.headers.get("idempotency-key")).toMatch(/^[0-9a-f-]{36}$/);

    const again = await ocr(["jobs", "cancel", jobId], account.key);
    expect(again).toMatchObject({ code: 0, stdout: `${jobId} had already ended: succeeded, 6/6 pages read\n` });
  });

  it("errors: unknown or another account's job → 5, expired → 5, malformed id or misplaced option → 2, bad key → 3", async () => {
    const other = await createAccount(1);
    const unknown = "job_AAAAAAAAAAAAAAAAAAAAAA";
    for (const [args, key] of [
      [["jobs", "get", unknown], account.key],
      [["jobs", "get", jobId], other.key],
      [["jobs", "result", jobId], other.key],
      [["jobs", "cancel", jobId], other.key],
    ] as const) {
      const run = await ocr([...args], key);
      expect({ args, code: run.code }).toEqual({ args, code: 5 });
      expect(run.stderr).toMatch(/^ocr: not_found: No job job_[\w-]{22} for this account.* \(request req_[\w-]+\)$/m);
    }
    expect(await getJobView(getStore(), getEnv(), services().deliveries, account.userId, jobId)).toMatchObject({
      status: "succeeded",
    });

    server.current.intercept = (request) =>
      request.path.startsWith("/api/ocr/jobs/")
        ? Response.json(
            { success: false, error: { code: "gone", message: `Job ${jobId} expired` }, requestId: "req_injected" },
            { status: 410 },
          )
        : undefined;
    const gone = await ocr(["jobs", "result", jobId], account.key);
    expect(gone.code).toBe(5);
    expect(gone.stderr).toContain(`gone: Job ${jobId} expired (request req_injected)`);
    server.current.intercept = undefined;
    server.current.requests.length = 0;

    for (const args of [
      ["jobs"],
      ["jobs", "get"],
      ["jobs", "get", "job_short"],
      ["jobs", "get", jobId, jobId],
      ["jobs", "list", "--format", "json"],
      ["jobs", "get", jobId, "--pages", "1"],
      ["jobs", "result", jobId, "--limit", "2"],
      ["jobs", "list", "--limit", "500"],
      ["jobs", "list", "--cursor", "abc"],
      ["jobs", "frobnicate"],
      ["extract", PNG, "--async", "--sync"],
    ]) {
      const run = await ocr(args, account.key);
      expect({ args, code: run.code }).toEqual({ args, code: 2 });
    }
    expect(server.current.requests).toEqual([]);

    const wrong = await ocr(["jobs", "list"], "ocr_wrong0000000000000000000000000000000000");
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toMatch(/unauthorized: Invalid or revoked API key/);
  });
});
