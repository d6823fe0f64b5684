import http from "node:http";
import https from "node:https";
import net, { type AddressInfo } from "node:net";
import tls from "node:tls";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ApiError, type ErrorCode } from "@/lib/api/errors";
import type * as address from "@/lib/input/address";
import { configuredAllowList } from "@/lib/input/allow-hosts";
import { fetchRemoteFile, pinnedLookup, type ResolveHost } from "@/lib/input/fetch-remote";
import { getEnv } from "@/lib/env";

/*
 * Connection pinning, proven on real sockets. A test cannot reach a public server, so this file (and only
 * this file) lets the guard treat exactly 127.0.0.1 as public: 127.0.0.1 plays "the public address that
 * was checked". The hosts used below (*.test, RFC 6761) do not resolve in real DNS, so a fetch that
 * succeeds connected to the checked address from the `resolveHost` answer, not to a second lookup.
 */
vi.mock("@/lib/input/address", async (importOriginal) => {
  const actual = await importOriginal<typeof address>();
  return { ...actual, isPublicAddress: (ip: string) => ip === "127.0.0.1" || actual.isPublicAddress(ip) };
});

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);

// Test-only CA and a certificate for files.test (EC P-256, valid until 2126), made with openssl.
const TEST_CA = `-----BEGIN CERTIFICATE-----
MIIBlDCCATmgAwIBAgIUV1yowsielI3GQzAx2OPHr6uLij4wCgYIKoZIzj0EAwIw
HjEcMBoGA1UEAwwTb2NyLXNlcnZpY2UgdGVzdCBDQTAgFw0yNjExMjEwNTE4MDla
GA8yMTI2MTAyODA1MTgwOVowHjEcMBoGA1UEAwwTb2NyLXNlcnZpY2UgdGVzdCBD
QTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABDKYRYUtAZhA1EYgTEpavR7AuHqu
uThoUUSB1dO2qrEbl9HSoV5QuIFVbzCFFS+PJwbqU0hFNLWv4T5xcAvhrc+jUzBR
MB0GA1UdDgQWBBRI9OrlXjEF77FkggpBvkR1b/V8uDAfBgNVHSMEGDAWgBRI9Orl
XjEF77FkggpBvkR1b/V8uDAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0kA
MEYCIQC1mYbwJHimvfhy2hA8GsHvDe0pvgLHOuW4m6BSm/hr3gIhAMQO95kUOj+a
Z+1s0/D72VtJyFTKECr4gValz8cFXhZx
-----END CERTIFICATE-----
`;
const FILES_TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBwDCCAWWgAwIBAgIUWus+I5De7F2dABjq+fdSOASDOPgwCgYIKoZIzj0EAwIw
HjEcMBoGA1UEAwwTb2NyLXNlcnZpY2UgdGVzdCBDQTAgFw0yNjExMjEwNTE4MDla
GA8yMTI2MTAyODA1MTgwOVowFTETMBEGA1UEAwwKZmlsZXMudGVzdDBZMBMGByqG
SM49AgEGCCqGSM49AwEHA0IABEDvG4GkUnsYR5aPU/yQkm4bx4pZWulwZfh0F+Rp
kAO1lyuGP5/dpHeFTVF0rfHjQPlTBOUY204RPnhcVvtGEiujgYcwgYQwFQYDVR0R
BA4wDIIKZmlsZXMudGVzdDAJBgNVHRMEAjAAMAsGA1UdDwQEAwIHgDATBgNVHSUE
DDAKBggrBgEFBQcDATAdBgNVHQ4EFgQUOx7w3sNZP1rq/jKrCK+MihSJcW8wHwYD
VR0jBBgwFoAUSPTq5V4xBe+xZIIKQb5EdW/1fLgwCgYIKoZIzj0EAwIDSQAwRgIh
ANSXgE8noIKseKvMZU4G/ynbKn/QR8Bpw1LyMNOy+vFSAiEAhm7sqBTu1Ep8O9k6
hie8EcF26ka9WXaW7MdsX7206vY=
-----END CERTIFICATE-----
`;
const FILES_TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg/okiDI2+QlUpfFVq
6GyWFpPHGfztWPSdx6BLXTWe1dehRANCAARA7xuBpFJ7GEeWj1P8kJJuG8eKWVrp
cGX4dBfkaZADtZcrhj+f3aR3hU1RdK3x40D5UwTlGNtOET54XFb7RhIr
-----END PRIVATE KEY-----
`;

/** What the servers saw: one entry per request. */
const seen: Array<{ path: string; host: string | undefined; servername?: string | false | null }> = [];

/** `*.test` names answer 127.0.0.1 (the "checked public address"); evil.test answers a loopback that is not it. */
const resolveHost = vi.fn<ResolveHost>(async (hostname) => {
  if (hostname === "evil.test") return [{ address: "127.0.0.2", family: 4 }];
  return [{ address: "127.0.0.1", family: 4 }];
});

function route(req: http.IncomingMessage, res: http.ServerResponse): void {
  const servername = "servername" in req.socket ? (req.socket as tls.TLSSocket).servername : undefined;
  seen.push({ path: req.url ?? "", host: req.headers.host, servername });
  const url = new URL(req.url ?? "/", "http://x");
  switch (url.pathname) {
    case "/scan.png":
      res.writeHead(200, { "content-type": "image/png" }).end(PNG);
      return;
    case "/hop":
      res.writeHead(302, { location: `http://other.test:${httpPort}/scan.png` }).end();
      return;
    case "/evil":
      res.writeHead(302, { location: `http://evil.test:${httpPort}/scan.png` }).end();
      return;
    case "/endless": {
      const chunk = Buffer.alloc(64 * 1024, 1);
      const write = () => {
        while (!res.destroyed && endless.written < 256 * 1024 * 1024) {
          endless.written += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", write);
        }
        res.end();
      };
      res.on("close", () => (endless.closed = true));
      res.writeHead(200);
      write();
      return;
    }
    case "/hang":
      res.on("close", () => (hang.closed = true));
      return; // never answers
    default:
      res.writeHead(404).end();
  }
}

const endless = { written: 0, closed: false };
const hang = { closed: false };
let httpServer: http.Server;
let httpsServer: https.Server;
let httpPort: number;
let httpsPort: number;
let closedPort: number;
const defaultCAs = tls.getCACertificates("default");

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  httpServer = http.createServer(route);
  httpsServer = https.createServer({ cert: FILES_TEST_CERT, key: FILES_TEST_KEY }, route);
  httpPort = await listen(httpServer);
  httpsPort = await listen(httpsServer);
  const spare = net.createServer();
  closedPort = await listen(spare);
  await new Promise((resolve) => spare.close(resolve));
  tls.setDefaultCACertificates([...defaultCAs, TEST_CA]);
});
afterEach(() => {
  seen.length = 0;
  resolveHost.mockClear();
  net.setDefaultAutoSelectFamily(true);
});
afterAll(async () => {
  tls.setDefaultCACertificates(defaultCAs);
  httpServer.closeAllConnections();
  httpsServer.closeAllConnections();
  await Promise.all([
    new Promise((resolve) => httpServer.close(resolve)),
    new Promise((resolve) => httpsServer.close(resolve)),
  ]);
});

async function expectFailure(promise: Promise<unknown>, code: ErrorCode, status: number, message?: RegExp) {
  const error = await promise.then(
    () => new Error("expected an ApiError, got a result"),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  expect({ code: (error as ApiError).code, status: (error as ApiError).status }).toEqual({ code, status });
  if (message) expect((error as ApiError).message).toMatch(message);
}

describe("pinnedLookup", () => {
  const addresses = [
    { address: "2606:4700::1111", family: 6 as const },
    { address: "93.184.216.34", family: 4 as const },
  ];
  const call = (options: Parameters<ReturnType<typeof pinnedLookup>>[1]) =>
    new Promise<unknown[]>((resolve) => pinnedLookup(addresses)("any.example", options, (...args) => resolve(args)));

  it("answers the array form (all: true) with every checked address", async () => {
    expect(await call({ all: true })).toEqual([null, addresses]);
  });
  it("answers the single form with the first checked address", async () => {
    expect(await call({})).toEqual([null, "2606:4700::1111", 6]);
  });
  it("honours a requested family from the checked set", async () => {
    expect(await call({ family: 4 })).toEqual([null, "93.184.216.34", 4]);
    expect(await call({ family: 6, all: true })).toEqual([null, [addresses[0]]]);
  });
  it("never answers an address outside the checked set", async () => {
    const only4 = pinnedLookup([{ address: "93.184.216.34", family: 4 }]);
    const answer = await new Promise<unknown[]>((resolve) => only4("x", { family: 6 }, (...args) => resolve(args)));
    expect(answer).toEqual([null, "93.184.216.34", 4]);
  });
});

describe("fetchRemoteFile connects to the address it checked", () => {
  it.each([
    ["with happy eyeballs (lookup called with all: true)", true],
    ["without (lookup called for one address)", false],
  ])("http, %s", async (_name, autoSelectFamily) => {
    net.setDefaultAutoSelectFamily(autoSelectFamily);
    const file = await fetchRemoteFile(`http://files.test:${httpPort}/scan.png`, {
      allowHosts: configuredAllowList(getEnv()),
      maxBytes: getEnv().MAX_URL_BYTES,
      resolveHost,
    });
    expect(Buffer.from(file.bytes).equals(PNG)).toBe(true);
    expect(file.contentType).toBe("image/png");
    expect(resolveHost).toHaveBeenCalledExactlyOnceWith("files.test");
    expect(seen).toEqual([{ path: "/scan.png", host: `files.test:${httpPort}`, servername: undefined }]);
  });

  it("https: SNI and certificate checks use the hostname while the socket goes to the checked address", async () => {
    const file = await fetchRemoteFile(`https://files.test:${httpsPort}/scan.png?sig=abc`, {
      allowHosts: configuredAllowList(getEnv()),
      maxBytes: getEnv().MAX_URL_BYTES,
      resolveHost,
    });
    expect(Buffer.from(file.bytes).equals(PNG)).toBe(true);
    expect(seen).toEqual([{ path: "/scan.png?sig=abc", host: `files.test:${httpsPort}`, servername: "files.test" }]);
  });

  it("https: a certificate for another name is 502 fetch_failed", async () => {
    await expectFailure(
      fetchRemoteFile(`https://other.test:${httpsPort}/scan.png`, {
        allowHosts: configuredAllowList(getEnv()),
        maxBytes: getEnv().MAX_URL_BYTES,
        resolveHost,
      }),
      "fetch_failed",
      502,
      /TLS handshake failed/,
    );
    expect(seen).toEqual([]);
  });

  it("re-resolves and re-checks each redirect hop", async () => {
    const file = await fetchRemoteFile(`http://files.test:${httpPort}/hop`, {
      allowHosts: configuredAllowList(getEnv()),
      maxBytes: getEnv().MAX_URL_BYTES,
      resolveHost,
    });
    expect(file.finalUrl).toBe(`http://other.test:${httpPort}/scan.png`);
    expect(resolveHost.mock.calls).toEqual([["files.test"], ["other.test"]]);
    expect(seen.map(({ path, host }) => [path, host])).toEqual([
      ["/hop", `files.test:${httpPort}`],
      ["/scan.png", `other.test:${httpPort}`],
    ]);
  });

  it("refuses a hop whose name resolves to a private address: 400, the hop is never requested", async () => {
    await expectFailure(
      fetchRemoteFile(`http://files.test:${httpPort}/evil`, {
        allowHosts: configuredAllowList(getEnv()),
        maxBytes: getEnv().MAX_URL_BYTES,
        resolveHost,
      }),
      "invalid_request",
      400,
    );
    expect(seen.map(({ path }) => path)).toEqual(["/evil"]);
  });

  it("stops reading a real endless body past the limit and closes the connection", async () => {
    const maxBytes = 1024 * 1024;
    await expectFailure(
      fetchRemoteFile(`http://files.test:${httpPort}/endless`, {
        allowHosts: configuredAllowList(getEnv()),
        resolveHost,
        maxBytes,
      }),
      "payload_too_large",
      413,
    );
    await vi.waitFor(() => expect(endless.closed).toBe(true));
    // Past the limit only by what sat in socket buffers; the server wanted to send 256 MiB.
    expect(endless.written).toBeLessThan(32 * maxBytes);
  });

  it("times out a server that never answers (502) and closes the connection", async () => {
    await expectFailure(
      fetchRemoteFile(`http://files.test:${httpPort}/hang`, {
        allowHosts: configuredAllowList(getEnv()),
        maxBytes: getEnv().MAX_URL_BYTES,
        resolveHost,
        timeoutMs: 200,
      }),
      "fetch_failed",
      502,
      /timed out after 0\.2 s/,
    );
    await vi.waitFor(() => expect(hang.closed).toBe(true));
  });

  it("maps connection refused to 502 fetch_failed", async () => {
    await expectFailure(
      fetchRemoteFile(`http://files.test:${closedPort}/scan.png`, {
        allowHosts: configuredAllowList(getEnv()),
        maxBytes: getEnv().MAX_URL_BYTES,
        resolveHost,
      }),
      "fetch_failed",
      502,
      /connection refused/,
    );
  });
});
