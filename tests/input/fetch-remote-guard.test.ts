import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ApiError } from "@/lib/api/errors";
import { configuredAllowList, fetchRemoteFile, type ResolveHost } from "@/lib/input";
import { getEnv } from "@/lib/env";

/*
 * A real server on 127.0.0.1, no msw and no mocks: whatever spelling of the URL points at it, the guard
 * refuses with 400 before a TCP connection is opened.
 */

let server: http.Server;
let port: number;
let connections = 0;

beforeAll(async () => {
  server = http.createServer((_req, res) => res.end("secret internal data"));
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
beforeEach(() => {
  connections = 0;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

const toLoopback: ResolveHost = async () => [{ address: "127.0.0.1", family: 4 }];
const mixed: ResolveHost = async () => [
  { address: "93.184.216.34", family: 4 },
  { address: "127.0.0.1", family: 4 },
];

describe("the SSRF guard against a real server on 127.0.0.1", () => {
  it("the server is reachable directly (control)", async () => {
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: "127.0.0.1", port, agent: false }, (res) => {
          res.setEncoding("utf8");
          let text = "";
          res.on("data", (chunk: string) => (text += chunk));
          res.on("end", () => resolve(text));
        })
        .on("error", reject);
    });
    expect(body).toBe("secret internal data");
    expect(connections).toBe(1);
  });

  it.each([
    ["dotted quad", (p: number) => `http://127.0.0.1:${p}/`, undefined],
    ["https to the same", (p: number) => `https://127.0.0.1:${p}/`, undefined],
    ["decimal", (p: number) => `http://2130706433:${p}/`, undefined],
    ["octal", (p: number) => `http://0177.0.0.1:${p}/`, undefined],
    ["hex", (p: number) => `http://0x7f000001:${p}/`, undefined],
    ["short", (p: number) => `http://127.1:${p}/`, undefined],
    ["IPv4-mapped IPv6", (p: number) => `http://[::ffff:127.0.0.1]:${p}/`, undefined],
    ["IPv6 loopback", (p: number) => `http://[::1]:${p}/`, undefined],
    ["unspecified 0.0.0.0", (p: number) => `http://0.0.0.0:${p}/`, undefined],
    ["localhost, system resolver", (p: number) => `http://localhost:${p}/`, undefined],
    ["a name resolving to 127.0.0.1", (p: number) => `http://internal.test:${p}/`, toLoopback],
    ["a name with a public and a loopback address", (p: number) => `http://internal.test:${p}/`, mixed],
  ] as const)("refuses %s with 400 and no connection", async (_name, makeUrl, resolveHost) => {
    const error = await fetchRemoteFile(makeUrl(port), {
      allowHosts: configuredAllowList(getEnv()),
      maxBytes: getEnv().MAX_URL_BYTES,
      resolveHost,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe("invalid_request");
    expect((error as ApiError).status).toBe(400);
    expect(connections).toBe(0);
  });
});
