import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  Client as ClientV2,
  SdkHttpError,
  StreamableHTTPClientTransport as StreamableV2,
} from "@modelcontextprotocol/client";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport as SseV1, SseError } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  StreamableHTTPClientTransport as StreamableV1,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import * as mcpRoute from "@/app/api/mcp/route";
import { characterErrorRate } from "@/bench/metrics";
import { base64Of, createAccount, groundTruth, withStore } from "../api/support";
import { withTestServer } from "../cli/support";
import { MCP_ENDPOINT, expectExtracted } from "./support";

/*
 * A wrong or missing key, as the popular clients report it. A key sent as `x-api-key` and refused is answered 403
 * without a Bearer challenge (REST: 401): these clients take a 401 for "sign in with OAuth", which cannot fix a header
 * they keep sending, and would not show why the key was refused. Each client here must show the service's message
 * and attempt no OAuth: no discovery (`/.well-known/oauth-*`), no client registration, no browser. Without any
 * credentials the answer is 401 with the sign-in challenge (tests/oauth/), and its message says to sign in or send
 * a key; a refused Bearer value is 401 `invalid_token` with its `error_description`.
 */

withStore("memory");

const WRONG_KEY = "ocr_wrong00000000000000000000000000000000000";
const MESSAGE = /Invalid or revoked API key/;

/** Every URL a client fetched, and a fetch that serves only /api/mcp (from the route module) and 404s the rest. */
function recordingFetch() {
  const urls: string[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    urls.push(`${request.method} ${new URL(request.url).pathname}`);
    if (new URL(request.url).pathname !== "/api/mcp") return Response.json({ error: "not found" }, { status: 404 });
    return request.method === "GET" ? mcpRoute.GET(request) : mcpRoute.POST(request);
  };
  return { urls, fetch };
}

/** An OAuth client provider as OAuth-capable apps pass one (the MCP Inspector's UI does): records what the SDK asks of it. */
function recordingAuthProvider(): { provider: OAuthClientProvider; calls: string[] } {
  const calls: string[] = [];
  const provider: OAuthClientProvider = {
    get redirectUrl() {
      return "http://localhost:6274/oauth/callback";
    },
    get clientMetadata() {
      return { redirect_uris: ["http://localhost:6274/oauth/callback"], client_name: "key-error tests" };
    },
    clientInformation: () => {
      calls.push("clientInformation");
      return undefined;
    },
    saveClientInformation: () => void calls.push("saveClientInformation"),
    tokens: () => undefined,
    saveTokens: () => void calls.push("saveTokens"),
    redirectToAuthorization: () => void calls.push("redirectToAuthorization"),
    saveCodeVerifier: () => void calls.push("saveCodeVerifier"),
    codeVerifier: () => {
      calls.push("codeVerifier");
      return "";
    },
  };
  return { provider, calls };
}

async function failure(connecting: Promise<unknown>): Promise<Error> {
  const outcome = await connecting.then(
    () => new Error("connected with a wrong key"),
    (reason: unknown) => reason,
  );
  if (!(outcome instanceof Error)) throw new Error(`not an Error: ${String(outcome)}`);
  return outcome;
}

const clientInfo = { name: "key-error-tests", version: "1.0.0" };
const url = new URL(MCP_ENDPOINT);

describe("SDK v1 (@modelcontextprotocol/sdk), as the MCP Inspector CLI and most hosts use it", () => {
  it("Streamable HTTP: the error carries the service's message and the 403", async () => {
    const { urls, fetch } = recordingFetch();
    const transport = new StreamableV1(url, { fetch, requestInit: { headers: { "x-api-key": WRONG_KEY } } });
    const error = await failure(new ClientV1(clientInfo).connect(transport));
    expect(error).toBeInstanceOf(StreamableHTTPError);
    expect((error as StreamableHTTPError).code).toBe(403);
    expect(error.message).toMatch(MESSAGE);
    expect(urls).toEqual(["POST /api/mcp"]);
  });

  it("Streamable HTTP without credentials (no auth provider): 401, and the message says to sign in or send a key", async () => {
    const { fetch } = recordingFetch();
    const error = await failure(new ClientV1(clientInfo).connect(new StreamableV1(url, { fetch })));
    expect(error.message).toMatch(/401/);
    expect(error.message).toMatch(/Missing credentials: sign in .*or send an API key as x-api-key/);
  });

  it("Streamable HTTP with an OAuth provider: no OAuth attempted, the message is shown", async () => {
    const { urls, fetch } = recordingFetch();
    const { provider, calls } = recordingAuthProvider();
    const transport = new StreamableV1(url, {
      fetch,
      authProvider: provider,
      requestInit: { headers: { "x-api-key": WRONG_KEY } },
    });
    const error = await failure(new ClientV1(clientInfo).connect(transport));
    expect(error.message).toMatch(MESSAGE);
    expect(calls).toEqual([]);
    expect(urls).toEqual(["POST /api/mcp"]);
  });

  it("SSE (EventSource reads no body, so only the status): 403 and no OAuth, even with a provider", async () => {
    const { urls, fetch } = recordingFetch();
    const { provider, calls } = recordingAuthProvider();
    const transport = new SseV1(url, {
      fetch,
      authProvider: provider,
      requestInit: { headers: { "x-api-key": WRONG_KEY } },
    });
    const error = await failure(new ClientV1(clientInfo).connect(transport));
    expect(error).toBeInstanceOf(SseError);
    expect((error as SseError).code).toBe(403);
    expect(calls).toEqual([]);
    expect(urls).toEqual(["GET /api/mcp"]);
  });
});

describe("SDK v2 (@modelcontextprotocol/client)", () => {
  it("Streamable HTTP with a wrong key as Bearer (no auth provider): 401 invalid_token, and the error carries the reason", async () => {
    const { urls, fetch } = recordingFetch();
    const transport = new StreamableV2(url, {
      fetch,
      requestInit: { headers: { authorization: `Bearer ${WRONG_KEY}` } },
    });
    const error = await failure(new ClientV2(clientInfo).connect(transport));
    expect(error.message).toMatch(MESSAGE);
    expect(urls).toEqual(["POST /api/mcp"]);
  });

  it("Streamable HTTP without credentials (no auth provider): the reason, not a bare status", async () => {
    const { fetch } = recordingFetch();
    const error = await failure(new ClientV2(clientInfo).connect(new StreamableV2(url, { fetch })));
    expect(error.message).toMatch(/Missing credentials: sign in/);
  });

  it("Streamable HTTP: the error carries the service's message and the 403", async () => {
    const { urls, fetch } = recordingFetch();
    const transport = new StreamableV2(url, { fetch, requestInit: { headers: { "x-api-key": WRONG_KEY } } });
    const error = await failure(new ClientV2(clientInfo).connect(transport));
    expect(error).toBeInstanceOf(SdkHttpError);
    expect(error.message).toMatch(MESSAGE);
    expect(urls).toEqual(["POST /api/mcp"]);
  });
});

/*
 * mcp-remote 0.15.1, the stdio bridge Claude Desktop runs, as a real process against the route handlers on a
 * localhost port. Its home and config directory are scratch directories, and every browser opener it knows of
 * (the `open` package's xdg-open, which honours BROWSER, and its Linux fallbacks) is a stub that records the call.
 */
describe("mcp-remote", () => {
  const server = withTestServer();
  const PROXY = path.resolve(import.meta.dirname, "../../node_modules/mcp-remote/dist/proxy.js");
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "ocr-mcp-remote-"));
  const bin = path.join(scratch, "bin");
  const opened = path.join(scratch, "browser-opened");
  fs.mkdirSync(bin);
  for (const name of ["xdg-open", "gio", "x-www-browser", "sensible-browser", "www-browser", "browser"]) {
    fs.writeFileSync(path.join(bin, name), `#!/bin/sh\necho "${name} $*" >> "${opened}"\n`, { mode: 0o755 });
  }
  afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));
  afterEach(() => {
    server.current.requests.length = 0;
  });

  function env(): Record<string, string> {
    const home = fs.mkdtempSync(path.join(scratch, "home-"));
    return {
      PATH: `${bin}:${process.env.PATH ?? ""}`,
      HOME: home,
      MCP_REMOTE_CONFIG_DIR: path.join(home, ".mcp-auth"),
      BROWSER: path.join(bin, "browser"),
    };
  }

  function args(key: string, extra: string[] = []): string[] {
    return [PROXY, `${server.current.baseUrl}/api/mcp`, "--header", `x-api-key:${key}`, ...extra];
  }

  /** mcp-remote with a refused key exits by itself; its stderr is what Claude Desktop's MCP log shows. */
  function runToExit(extra: string[] = []): Promise<{ code: number | null; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, args(WRONG_KEY, extra), {
        env: env() as NodeJS.ProcessEnv,
        stdio: ["pipe", "pipe", "pipe"],
      });
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      child.on("error", reject);
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
    });
  }

  function expectNoOAuth(stderr: string): void {
    expect(stderr).not.toMatch(
      /Please authorize|OAuth callback server|Initializing auth|Dynamic Client Registration|Authentication required/,
    );
    expect(
      server.current.requests.filter((request) => request.path === "/register" || request.path.includes("authorize")),
    ).toEqual([]);
    expect(fs.existsSync(opened)).toBe(false);
  }

  it("a wrong key: exits with the service's message, no sign-in started, no browser", async () => {
    const { code, stderr } = await runToExit();
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /Fatal error: .*Error POSTing to endpoint: \{"success":false,"error":\{"code":"unauthorized","message":"Invalid or revoked API key"\}/,
    );
    expectNoOAuth(stderr);
    expect(
      server.current.requests.filter((request) => request.path === "/api/mcp").map((request) => request.status),
    ).toEqual([403, 403, 403]);
  });

  it("--transport sse-only with a wrong key: no sign-in either (EventSource reports the 403 without the body)", async () => {
    const { code, stderr } = await runToExit(["--transport", "sse-only"]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/Fatal error: .*Non-200 status code \(403\)/);
    expectNoOAuth(stderr);
  });

  it("a good key: a stdio client lists extract_text and reads an image through it", async () => {
    const account = await createAccount(5);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: args(account.key),
      env: env(),
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const client = new ClientV1(clientInfo);
    try {
      await client.connect(transport);
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([
        "extract_text",
        "get_extraction",
        "show_extraction",
        "read_viewer_page",
      ]);
      const body = expectExtracted(
        await client.callTool({
          name: "extract_text",
          arguments: { image_source: { type: "base64", data: base64Of("paragraph.png") } },
        }),
      );
      expect(characterErrorRate(body.extractedText, groundTruth("paragraph.png"))).toBeLessThan(0.05);
      expect(await account.balance()).toBe(4);
      expect(stderr).toMatch(/Connected to remote server using StreamableHTTPClientTransport/);
      expectNoOAuth(stderr);
    } finally {
      await client.close();
    }
  });
});

describe("the body waits for the key (issue 41 point 4)", () => {
  it("a POST without credentials is answered 401 without its body being read, even one that never ends", async () => {
    // A `tasks/get` (a read about a job, which counts against the reads limit) whose body never finishes: the limit
    // is decided from the body after the key, so nothing of it is read before the 401 (a peek before the key read it,
    // and waited here for ever).
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(
          new TextEncoder().encode('{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":'),
        );
      },
      pull() {
        pulls += 1;
        return new Promise<void>(() => undefined); // the rest never comes
      },
    });
    const request = new Request(MCP_ENDPOINT, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body,
      duplex: "half",
    } as RequestInit);
    const answer = await Promise.race([
      mcpRoute.POST(request),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 5_000)),
    ]);
    expect(answer?.status).toBe(401);
    expect(pulls).toBe(0);
  });
});
