import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configuredAllowList, checkRemoteUrl, isAllowListed, postRemote } from "@/lib/input";
import { parseAllowList } from "@/lib/input/allow-hosts";
import { getEnv } from "@/lib/env";

/*
 * The SSRF guard as webhook deliveries use it (lib/input/fetch-remote.ts: checkRemoteUrl, postRemote), against a real
 * HTTP server on 127.0.0.1 — a private address, let through only by an allow list.
 */

const ALLOW = parseAllowList("127.0.0.1");
let server: http.Server;
let base = "";
const seen: Array<{ method: string; path: string; headers: http.IncomingHttpHeaders; body: string }> = [];

beforeAll(async () => {
  server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      seen.push({
        method: request.method ?? "",
        path: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
      });
      if (request.url === "/redirect") return void response.writeHead(302, { location: "/elsewhere" }).end();
      if (request.url === "/huge") {
        response.writeHead(200, { "content-type": "text/plain" });
        const chunk = Buffer.alloc(64 * 1024, 120);
        let sent = 0;
        const pump = () => {
          while (sent < 100 && response.write(chunk)) sent++;
          if (sent < 100) response.once("drain", pump);
          else response.end();
        };
        pump();
        return;
      }
      response.writeHead(request.url === "/fail" ? 500 : 204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe("postRemote", () => {
  it("POSTs the body with its headers and answers the status", async () => {
    seen.length = 0;
    expect(
      await postRemote(`${base}/hook?x=1`, {
        label: "webhook URL",
        allowHosts: ALLOW,
        timeoutMs: 5_000,
        body: '{"a":1}',
        headers: { "webhook-id": "msg_1" },
      }),
    ).toEqual({ status: 204 });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: "POST", path: "/hook?x=1", body: '{"a":1}' });
    expect(seen[0]!.headers).toMatchObject({
      "content-type": "application/json",
      "content-length": "7",
      "webhook-id": "msg_1",
    });
    expect(
      (
        await postRemote(`${base}/fail`, {
          label: "webhook URL",
          allowHosts: ALLOW,
          timeoutMs: 5_000,
          body: "{}",
          headers: {},
        })
      ).status,
    ).toBe(500);
  });

  it("does not follow a redirect, and does not read a huge answer", async () => {
    seen.length = 0;
    expect(
      (
        await postRemote(`${base}/redirect`, {
          label: "webhook URL",
          allowHosts: ALLOW,
          timeoutMs: 5_000,
          body: "{}",
          headers: {},
        })
      ).status,
    ).toBe(302);
    expect(seen.map((request) => request.path)).toEqual(["/redirect"]);
    expect(
      (
        await postRemote(`${base}/huge`, {
          label: "webhook URL",
          allowHosts: ALLOW,
          timeoutMs: 5_000,
          body: "{}",
          headers: {},
        })
      ).status,
    ).toBe(200);
  });

  it("refuses a private address without the allow list, before connecting; says what it is about", async () => {
    seen.length = 0;
    await expect(
      postRemote(`${base}/hook`, {
        label: "webhook URL",
        allowHosts: parseAllowList(""),
        timeoutMs: 5_000,
        body: "{}",
        headers: {},
      }),
    ).rejects.toMatchObject({
      code: "invalid_request",
      message: "URL not allowed: 127.0.0.1 is not a public address",
    });
    await expect(
      postRemote("https://hooks.example.test/x", {
        label: "webhook URL",
        allowHosts: parseAllowList(""),
        resolveHost: async () => [{ address: "10.0.0.7", family: 4 }],
        timeoutMs: 5_000,
        body: "{}",
        headers: {},
      }),
    ).rejects.toMatchObject({
      code: "invalid_request",
      message: "URL not allowed: hooks.example.test resolves to a private address",
    });
    await expect(
      postRemote("https://nowhere.example.test/x", {
        allowHosts: configuredAllowList(getEnv()),
        label: "webhook URL",
        resolveHost: async () => {
          throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
        },
        timeoutMs: 5_000,
        body: "{}",
        headers: {},
      }),
    ).rejects.toMatchObject({
      code: "fetch_failed",
      message: "Could not reach the webhook URL: could not resolve nowhere.example.test",
    });
    expect(seen).toHaveLength(0);
  });

  it("gives up at its timeout on a server that never answers", async () => {
    const silent = http.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/`;
    try {
      await expect(
        postRemote(url, { label: "webhook URL", allowHosts: ALLOW, timeoutMs: 300, body: "{}", headers: {} }),
      ).rejects.toMatchObject({
        code: "fetch_failed",
        message: "Could not reach the webhook URL: no answer within 0.3 s",
      });
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});

describe("checkRemoteUrl and isAllowListed", () => {
  it("checks scheme, credentials and addresses as fetchRemoteFile does", async () => {
    const resolveHost = async () => [{ address: "93.184.216.34", family: 4 as const }];
    expect(
      (
        await checkRemoteUrl("https://example.com/hook", {
          allowHosts: configuredAllowList(getEnv()),
          label: "webhook URL",
          resolveHost,
        })
      ).href,
    ).toBe("https://example.com/hook");
    await expect(
      checkRemoteUrl("ftp://example.com/", {
        allowHosts: configuredAllowList(getEnv()),
        label: "webhook URL",
        resolveHost,
      }),
    ).rejects.toMatchObject({
      code: "invalid_request",
    });
    await expect(
      checkRemoteUrl("https://user:pw@example.com/", {
        allowHosts: configuredAllowList(getEnv()),
        label: "webhook URL",
        resolveHost,
      }),
    ).rejects.toMatchObject({ code: "invalid_request" });
    await expect(
      checkRemoteUrl("nope", { allowHosts: configuredAllowList(getEnv()), label: "webhook URL" }),
    ).rejects.toMatchObject({
      message: "webhook URL is not a valid URL",
    });
    await expect(
      checkRemoteUrl("https://169.254.169.254/", { label: "webhook URL", allowHosts: parseAllowList("") }),
    ).rejects.toMatchObject({ code: "invalid_request" });
  });

  it("names allow-listed hosts: names (with their port), addresses and ranges", () => {
    const allow = parseAllowList("hooks.internal:8080, 10.1.0.0/16, 127.0.0.1");
    expect(isAllowListed(new URL("http://hooks.internal:8080/x"), allow)).toBe(true);
    expect(isAllowListed(new URL("http://hooks.internal/x"), allow)).toBe(false);
    expect(isAllowListed(new URL("http://10.1.2.3/x"), allow)).toBe(true);
    expect(isAllowListed(new URL("http://127.0.0.1:9999/x"), allow)).toBe(true);
    expect(isAllowListed(new URL("http://example.com/x"), allow)).toBe(false);
  });
});
