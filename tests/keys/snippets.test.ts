import { execFile } from "node:child_process";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestOrigin } from "@/lib/http/origin";
import { trySnippets } from "@/app/settings/snippets";
import { generateApiKey } from "@/lib/keys";

const run = promisify(execFile);
const headers = (values: Record<string, string>) => new Headers(values);

describe("the origin of the settings page's snippets", () => {
  it("comes from Host, over http only to a loopback host (the session cookie's rule)", () => {
    expect(requestOrigin(headers({ host: "127.0.0.1:3000" }))).toBe("http://127.0.0.1:3000");
    expect(requestOrigin(headers({ host: "localhost:3000", "x-forwarded-proto": "http" }))).toBe(
      "http://localhost:3000",
    );
    expect(requestOrigin(headers({ host: "[::1]:3000" }))).toBe("http://[::1]:3000");
    expect(requestOrigin(headers({ host: "ocr.example.com", "x-forwarded-proto": "https" }))).toBe(
      "https://ocr.example.com",
    );
    expect(requestOrigin(headers({ host: "OCR.Example.com", "x-forwarded-proto": "https,http" }))).toBe(
      "https://ocr.example.com",
    );
    // A public host is on https (or the Secure session cookie would not be there).
    expect(requestOrigin(headers({ host: "ocr.example.com" }))).toBe("https://ocr.example.com");
    expect(requestOrigin(headers({ host: "localhost:3000", "x-forwarded-proto": "https" }))).toBe(
      "https://localhost:3000",
    );
  });

  it("is null for a missing host or anything a shell would read", () => {
    for (const host of ["", "a b", "evil.com/path", "x$(id)", "x;rm", "`id`", "host:port", "a'b", 'a"b', "-x.com"]) {
      expect(requestOrigin(headers(host ? { host } : {})), host).toBeNull();
    }
  });
});

describe("the try-it snippets", () => {
  const key = generateApiKey();
  const origin = "https://ocr.example.com";
  const snippets = trySnippets({ key, origin });
  const byId = (id: string) => snippets.find((snippet) => snippet.id === id)?.code ?? "";

  it("are curl (a file and a URL), the CLI, Claude Code and an MCP configuration, each with the key and the origin", () => {
    expect(snippets.map((snippet) => snippet.id)).toEqual(["curl-base64", "curl-url", "cli", "claude-code", "cursor"]);
    for (const snippet of snippets) {
      expect(snippet.code).toContain(key);
      expect(snippet.code).toContain(origin);
      expect(snippet.copyLabel).toMatch(/^Copy /);
    }
    expect(new Set(snippets.map((snippet) => snippet.copyLabel)).size).toBe(snippets.length);
    expect(byId("curl-base64")).toContain(`${origin}/api/ocr/process`);
    expect(byId("curl-base64")).toContain("base64 < public/samples/scan.png");
    expect(byId("curl-base64")).not.toContain("uuidgen");
    expect(byId("curl-url")).toContain(`${origin}/samples/`);
    expect(byId("cli")).toContain(`OCR_BASE_URL=${origin}`);
    expect(byId("cli")).toContain("npx ocr extract public/samples/scan.png");
    expect(byId("claude-code")).toContain(`claude mcp add --transport http ocr ${origin}/api/mcp`);
    expect(JSON.parse(byId("cursor"))).toEqual({
      mcpServers: { ocr: { url: `${origin}/api/mcp`, headers: { "x-api-key": key } } },
    });
  });

  it("say the sample URL works on a local server too, and what else a local server refuses", () => {
    const local = trySnippets({ key, origin: "http://localhost:3000" });
    const note = local.find((snippet) => snippet.id === "curl-url")?.note ?? "";
    expect(note).toMatch(/works on a local server too/);
    expect(note).toMatch(/URL_ALLOW_HOSTS/);
  });

  it("fail loudly: both curl commands use --fail-with-body (a non-zero exit on an error answer, with its body)", () => {
    for (const id of ["curl-base64", "curl-url"]) expect(byId(id), id).toContain("curl -sS --fail-with-body ");
  });

  it("are valid POSIX sh", async () => {
    for (const id of ["curl-base64", "curl-url", "cli", "claude-code"]) await run("sh", ["-n", "-c", byId(id)]);
  });

  describe("the curl command, run by sh against a server that records what it gets", () => {
    let dir = "";
    let received: { url?: string; headers?: Record<string, string | string[] | undefined>; body?: string } = {};
    /** What the server answers next: a success, or the service's 402. */
    let answer: { status: number; body: string } = { status: 200, body: '{"success":true}' };
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        received = { url: request.url, headers: request.headers, body: Buffer.concat(chunks).toString() };
        response.statusCode = answer.status;
        response.setHeader("content-type", "application/json");
        response.end(answer.body);
      });
    });
    // 200 kB of bytes: their base64 (267 kB) is more than one command-line argument may hold (128 kB on Linux).
    const file = Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 7919) % 251));
    const samplePath = "public/samples/scan.png";

    beforeAll(async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), "ocr-snippet-"));
      await mkdir(path.join(dir, path.dirname(samplePath)), { recursive: true });
      await writeFile(path.join(dir, samplePath), file);
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    });
    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
      await rm(dir, { recursive: true, force: true });
    });

    it("posts the file as base64 in image, with the key, whatever the file's size", async () => {
      const local = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const code = trySnippets({ key, origin: local }).find((snippet) => snippet.id === "curl-base64")?.code ?? "";
      const { stdout } = await run("sh", ["-c", code], { cwd: dir });
      expect(JSON.parse(stdout)).toEqual({ success: true });
      expect(received.url).toBe("/api/ocr/process");
      expect(received.headers?.["x-api-key"]).toBe(key);
      expect(received.headers?.["content-type"]).toBe("application/json");
      expect(JSON.parse(received.body ?? "")).toMatchObject({ image: file.toString("base64") });
    });

    it.each(["curl-base64", "curl-url"])("%s exits non-zero on an error answer and prints its body", async (id) => {
      const local = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const code = trySnippets({ key, origin: local }).find((snippet) => snippet.id === id)?.code ?? "";
      const error =
        '{"success":false,"error":{"code":"insufficient_credits","message":"Insufficient credits"},"requestId":"req_x"}';
      answer = { status: 402, body: error };
      try {
        const outcome = await run("sh", ["-c", code], { cwd: dir }).then(
          () => ({ code: 0, stdout: "" }),
          (failure: { code: number; stdout: string }) => failure,
        );
        expect(outcome.code).toBe(22);
        expect(outcome.stdout).toBe(error);
      } finally {
        answer = { status: 200, body: '{"success":true}' };
      }
    });
  });
});
