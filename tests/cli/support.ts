import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll } from "vitest";
import * as creditsRoute from "@/app/api/credits/route";
import * as mcpRoute from "@/app/api/mcp/route";
import * as jobResultRoute from "@/app/api/ocr/jobs/[id]/result/route";
import * as jobRoute from "@/app/api/ocr/jobs/[id]/route";
import * as jobsRoute from "@/app/api/ocr/jobs/route";
import * as processRoute from "@/app/api/ocr/process/route";

const ROOT = path.resolve(import.meta.dirname, "../..");

type Handler = (req: Request) => Promise<Response>;
type RouteModule = Partial<Record<"GET" | "POST" | "OPTIONS" | "HEAD" | "PUT" | "PATCH" | "DELETE", Handler>>;

/** One request as the test server saw it (before any interception). */
export interface LoggedRequest {
  method: string;
  path: string;
  search: string;
  headers: Headers;
  body: string;
  /** The body's bytes (`body` is them as UTF-8). */
  raw: Buffer;
  /** The status answered (0 while streaming). */
  status: number;
}

/**
 * Fault injection: return a Response (or a promise of one) to answer instead of the route, `"drop"` to close the
 * socket without an answer, or undefined to pass the request through.
 */
export type Interceptor = (request: LoggedRequest) => Response | Promise<Response | undefined> | "drop" | undefined;

export interface TestServer {
  baseUrl: string;
  requests: LoggedRequest[];
  intercept: Interceptor | undefined;
  close(): Promise<void>;
}

/**
 * The real route handlers on an ephemeral localhost port, as Next would call them: each request becomes a
 * `Request` (aborted when the client goes away) and the `Response` is streamed back (SSE included).
 */
export async function startServer(): Promise<TestServer> {
  const routes: Record<string, RouteModule> = {
    "/api/ocr/process": processRoute,
    "/api/mcp": mcpRoute,
    "/api/credits": creditsRoute,
    "/api/ocr/jobs": jobsRoute,
  };
  // Dynamic segments, as Next's file-system router matches them.
  const routeFor = (pathname: string): RouteModule | undefined =>
    routes[pathname] ??
    (/^\/api\/ocr\/jobs\/[^/]+\/result$/.test(pathname)
      ? jobResultRoute
      : /^\/api\/ocr\/jobs\/[^/]+$/.test(pathname)
        ? jobRoute
        : undefined);
  const state: TestServer = { baseUrl: "", requests: [], intercept: undefined, close: async () => undefined };

  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", state.baseUrl);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const headers = new Headers();
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
    const method = (req.method ?? "GET").toUpperCase();
    const logged: LoggedRequest = {
      method,
      path: url.pathname,
      search: url.search,
      headers,
      body: body.toString("utf8"),
      raw: body,
      status: 0,
    };
    state.requests.push(logged);

    const injected = await state.intercept?.(logged);
    if (injected === "drop") {
      req.socket.destroy();
      return;
    }
    const controller = new AbortController();
    res.on("close", () => controller.abort());
    let response: Response;
    if (injected) {
      response = injected;
    } else {
      const handler = routeFor(url.pathname)?.[method as keyof RouteModule];
      response = handler
        ? await handler(
            new Request(url, {
              method,
              headers,
              body: method === "GET" || method === "HEAD" ? undefined : body,
              signal: controller.signal,
            }),
          )
        : new Response("<!DOCTYPE html><title>404: This page could not be found.</title>", {
            status: 404,
            headers: { "content-type": "text/html" },
          });
    }
    logged.status = response.status;
    res.writeHead(response.status, [...response.headers].flat());
    res.flushHeaders();
    if (!response.body) return void res.end();
    try {
      for await (const chunk of response.body) res.write(chunk);
    } catch {
      // the client went away mid-stream
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

/** The test server for the tests of one file; `intercept` and the request log are cleared between tests. */
export function withTestServer(): { current: TestServer } {
  const holder = {} as { current: TestServer };
  beforeAll(async () => {
    holder.current = await startServer();
  });
  afterAll(async () => {
    await holder.current?.close();
  });
  return holder;
}

/** The CLI exactly as it ships: bundled by cli/build.mjs into a file of its own for this test file. */
export function withBuiltCli(): { path: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ocr-cli-test-"));
  const bundle = { path: path.join(dir, "ocr.mjs") };
  beforeAll(() => {
    execFileSync(process.execPath, [path.join(ROOT, "cli/build.mjs"), "--outfile", bundle.path], { stdio: "pipe" });
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return bundle;
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  stdin?: Buffer | string;
  timeoutMs?: number;
}

/** Run the bundled CLI as a child process with a clean environment (PATH only, plus `env`). */
export function runCli(bundle: string, args: string[], options: RunOptions = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string> = { PATH: process.env.PATH ?? "" };
    for (const [name, value] of Object.entries(options.env ?? {})) if (value !== undefined) env[name] = value;
    const child = spawn(process.execPath, [bundle, ...args], {
      cwd: options.cwd ?? os.tmpdir(),
      env: env as NodeJS.ProcessEnv,
      stdio: "pipe",
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.stdin);
  });
}

/** A localhost port nothing listens on (it was free a moment ago). */
export async function unusedPort(): Promise<number> {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Scratch directories for the tests of one file, removed after them. */
export function withTempDirs(): (label: string) => string {
  const made: string[] = [];
  afterAll(() => {
    for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });
  return (label) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `ocr-cli-${label}-${randomBytes(3).toString("hex")}-`));
    made.push(dir);
    return dir;
  };
}
