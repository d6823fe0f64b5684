import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { PHASE_PRODUCTION_BUILD } from "next/constants";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import * as mcpRoute from "@/app/api/mcp/route";
import { OWN_SAMPLES, ownSampleName, readOwnSample } from "@/lib/input";
import { services } from "@/lib/services";
import config from "@/next.config";
import { callOcr, createAccount, expectApiError, expectOcrOk, withStore } from "../api/support";
import { jsonRpcResultSchema, rpcRequest } from "../mcp/support";

/*
 * An imageUrl naming this server's own /samples/<file> is read from public/samples, never fetched (so the docs' URL
 * examples work on a local server, whose address the SSRF guard refuses), and nothing else gets through. A real HTTP
 * server on 127.0.0.1 stands where "this server" is: it counts the requests it gets, which must stay 0.
 */
const ROOT = path.resolve(import.meta.dirname, "../..");
const SAMPLES = path.join(ROOT, "public/samples");
const REPORT_TEXT = fs.readFileSync(path.join(SAMPLES, "report.txt"), "utf8");

let server: http.Server;
let host = "";
let hits: string[] = [];
beforeAll(async () => {
  server = http.createServer((req, res) => {
    hits.push(req.url ?? "");
    res.writeHead(200, { "content-type": "application/pdf" }).end(fs.readFileSync(path.join(SAMPLES, "report.pdf")));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));
beforeEach(() => {
  hits = [];
});

describe("ownSampleName: which URLs name this server's own samples", () => {
  it("the exact /samples/<file> path of each sample on the request's own host, whatever the case of the host or a default port", () => {
    for (const name of OWN_SAMPLES) {
      expect(ownSampleName(`http://127.0.0.1:3000/samples/${name}`, "127.0.0.1:3000")).toBe(name);
      expect(ownSampleName(`http://localhost:3000/samples/${name}?v=2#top`, "localhost:3000")).toBe(name);
      expect(ownSampleName(`http://[::1]:3000/samples/${name}`, "[::1]:3000")).toBe(name);
      expect(ownSampleName(`https://ocr.example.com/samples/${name}`, "OCR.Example.com:443")).toBe(name);
    }
  });

  it.each([
    ["another path of this server", "http://127.0.0.1:3000/api/health", "127.0.0.1:3000"],
    ["a file beside the samples", "http://127.0.0.1:3000/samples/scan.txt", "127.0.0.1:3000"],
    ["a path that only starts like a sample", "http://127.0.0.1:3000/samples/scan.png/x", "127.0.0.1:3000"],
    ["another case", "http://127.0.0.1:3000/samples/SCAN.png", "127.0.0.1:3000"],
    ["an encoded name", "http://127.0.0.1:3000/samples/%73can.png", "127.0.0.1:3000"],
    [
      "a dot-dot path (normalized away from /samples/)",
      "http://127.0.0.1:3000/samples/../api/health",
      "127.0.0.1:3000",
    ],
    ["an encoded dot-dot", "http://127.0.0.1:3000/samples/%2e%2e/samples/x/../../etc/passwd", "127.0.0.1:3000"],
    ["another port", "http://127.0.0.1:3001/samples/scan.png", "127.0.0.1:3000"],
    ["another name for the same machine", "http://localhost:3000/samples/scan.png", "127.0.0.1:3000"],
    ["another host", "https://files.example/samples/scan.png", "ocr.example.com"],
    ["credentials in the URL", "http://user:secret@127.0.0.1:3000/samples/scan.png", "127.0.0.1:3000"],
    ["a non-http scheme", "file:///samples/scan.png", "127.0.0.1:3000"],
    ["no Host", "http://127.0.0.1:3000/samples/scan.png", undefined],
    ["a Host with a path", "http://127.0.0.1:3000/samples/scan.png", "127.0.0.1:3000/samples"],
    ["a Host with credentials", "http://127.0.0.1:3000/samples/scan.png", "user@127.0.0.1:3000"],
    ["not a URL", "scan.png", "127.0.0.1:3000"],
  ])("not %s", (_label, url, serverHost) => {
    expect(ownSampleName(url, serverHost)).toBeUndefined();
  });

  it("names every PDF and image of public/samples, and each is traced into the OCR and MCP routes' build", async () => {
    const files = fs.readdirSync(SAMPLES).filter((name) => /\.(pdf|png|jpe?g|webp)$/.test(name));
    expect([...OWN_SAMPLES].sort()).toEqual(files.sort());
    const includes = (await config(PHASE_PRODUCTION_BUILD)).outputFileTracingIncludes ?? {};
    for (const route of ["/api/ocr/process", "/api/mcp"]) {
      for (const name of OWN_SAMPLES) expect(includes[route], route).toContain(`./public/samples/${name}`);
    }
  });

  it("readOwnSample gives the file's bytes, and nothing for any other URL", async () => {
    expect(Buffer.from((await readOwnSample("http://127.0.0.1:3000/samples/scan.png", "127.0.0.1:3000"))!)).toEqual(
      fs.readFileSync(path.join(SAMPLES, "scan.png")),
    );
    expect(await readOwnSample("http://127.0.0.1:3000/samples/scan.txt", "127.0.0.1:3000")).toBeUndefined();
  });
});

describe("POST /api/ocr/process and extract_text with this server's own sample URL", () => {
  withStore("memory");
  afterAll(() => services().pool.terminate());

  const call = (key: string, imageUrl: string, headers: Record<string, string>) =>
    callOcr({ imageUrl, options: { pages: "1" } }, { key, headers });

  it("REST: the sample is read on a loopback server, with nothing fetched, and charged like any URL", async () => {
    const account = await createAccount(10);
    const body = await expectOcrOk(await call(account.key, `http://${host}/samples/report.pdf`, { host }));
    expect(body).toMatchObject({ inputSource: "url", creditsUsed: 1, pageCount: 2 });
    expect(body.extractedText).toContain(REPORT_TEXT.split("\n")[0]);
    expect(hits).toEqual([]);
    expect(await account.balance()).toBe(9);
  });

  it("REST: on a public deployment too (https, the Host with its default port), without going out to the network", async () => {
    const account = await createAccount(10);
    const body = await expectOcrOk(
      await call(account.key, "https://ocr.example.com/samples/report.pdf", { host: "ocr.example.com:443" }),
    );
    expect(body.extractedText).toContain("Annual Summary");
  });

  it.each([
    ["another path of this server", (h: string) => `http://${h}/api/health`, /is not a public address/],
    ["a file beside the samples", (h: string) => `http://${h}/samples/report.txt`, /is not a public address/],
    ["a dot-dot path", (h: string) => `http://${h}/samples/../api/health`, /is not a public address/],
    [
      "another port of this machine",
      (h: string) => `http://${h.replace(/:\d+$/, ":1")}/samples/report.pdf`,
      /is not a public address/,
    ],
    [
      "another name for this machine",
      (h: string) => `http://${h.replace("127.0.0.1", "localhost")}/samples/report.pdf`,
      /resolves to a private address/,
    ],
  ])("REST: %s stays refused by the SSRF guard (400), nothing fetched or charged", async (_label, url, message) => {
    const account = await createAccount(10);
    await expectApiError(await call(account.key, url(host), { host }), "invalid_request", message);
    expect(hits).toEqual([]);
    expect(await account.balance()).toBe(10);
  });

  it("REST: without a Host that names this server, the sample URL is an ordinary URL (a loopback one: refused)", async () => {
    const account = await createAccount(10);
    await expectApiError(
      await call(account.key, `http://${host}/samples/report.pdf`, {}),
      "invalid_request",
      /is not a public address/,
    );
    await expectApiError(
      await call(account.key, `http://${host}/samples/report.pdf`, { host: "ocr.example.com" }),
      "invalid_request",
      /is not a public address/,
    );
    expect(hits).toEqual([]);
  });

  it("MCP: extract_text with the sample's URL reads it the same way", async () => {
    const account = await createAccount(10);
    const response = await mcpRoute.POST(
      rpcRequest(
        {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: {
            name: "extract_text",
            arguments: { image_source: { type: "url", data: `http://${host}/samples/report.pdf` } },
          },
        },
        { key: account.key, headers: { host } },
      ),
    );
    expect(response.status).toBe(200);
    const { result } = jsonRpcResultSchema.parse(await response.json());
    expect(result.isError).toBeUndefined();
    expect(result.structuredContent).toMatchObject({ success: true, inputSource: "url", creditsUsed: 2 });
    expect(hits).toEqual([]);
  });
});
