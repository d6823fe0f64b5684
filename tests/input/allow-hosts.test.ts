import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { allowsAddress, allowsName, configuredAllowList, parseAllowList } from "@/lib/input/allow-hosts";
import { fetchRemoteFile } from "@/lib/input/fetch-remote";
import { services } from "@/lib/services";
import { callOcr, createAccount, expectApiError, expectOcrOk, setEnv, withStore } from "../api/support";
import { getEnv } from "@/lib/env";

/*
 * URL_ALLOW_HOSTS lets a self-hoster's private file server through the SSRF guard — only what is listed, on the port
 * listed. A real HTTP server on 127.0.0.1 plays the internal MinIO; no msw here: real sockets.
 */
const SAMPLE = fs.readFileSync(path.resolve(import.meta.dirname, "../../public/samples/scan.png"));
const SAMPLE_TEXT = fs.readFileSync(path.resolve(import.meta.dirname, "../../public/samples/scan.txt"), "utf8");

let server: http.Server;
let port = 0;
beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === "/to-private") {
      res.writeHead(302, { location: "http://10.255.0.1/secret.png" }).end();
      return;
    }
    res.writeHead(200, { "content-type": "image/png" }).end(SAMPLE);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const refused = (promise: Promise<unknown>) =>
  expect(promise).rejects.toMatchObject({ code: "invalid_request", message: /^URL not allowed/ });

describe("URL_ALLOW_HOSTS", () => {
  it("parses names, addresses (with or without a port) and CIDR ranges; refuses anything else by name", () => {
    const list = parseAllowList(
      " minio.internal:9000 , 127.0.0.1:8080, [fd00::5]:443, 10.20.0.0/16, fd00:1::/32, files.corp ",
    );
    expect(list.names).toEqual([{ name: "minio.internal", port: 9000 }, { name: "files.corp" }]);
    expect(list.addresses).toEqual([
      { address: "127.0.0.1", port: 8080 },
      { address: "fd00::5", port: 443 },
    ]);
    expect(allowsName(list, "MINIO.internal.", 9000)).toBe(true);
    expect(allowsName(list, "minio.internal", 9001)).toBe(false);
    expect(allowsName(list, "files.corp", 80)).toBe(true);
    expect(allowsAddress(list, { address: "127.0.0.1", family: 4 }, 8080)).toBe(true);
    expect(allowsAddress(list, { address: "127.0.0.1", family: 4 }, 8081)).toBe(false);
    expect(allowsAddress(list, { address: "10.20.255.1", family: 4 }, 1)).toBe(true);
    expect(allowsAddress(list, { address: "10.21.0.1", family: 4 }, 1)).toBe(false);
    expect(allowsAddress(list, { address: "fd00:1:ffff::1", family: 6 }, 80)).toBe(true);
    expect(allowsAddress(list, { address: "fd00:2::1", family: 6 }, 80)).toBe(false);
    expect(parseAllowList("")).toEqual({ names: [], addresses: [], ranges: [] });
    for (const bad of ["http://minio:9000", "10.0.0.0/33", "host:99999", "a b", "*.corp"]) {
      expect(() => parseAllowList(bad), bad).toThrow(/URL_ALLOW_HOSTS/);
    }
  });

  it("a file on a private host passes only when that host and port are listed", async () => {
    const url = `http://127.0.0.1:${port}/scan.png`;
    await refused(
      fetchRemoteFile(url, { allowHosts: configuredAllowList(getEnv()), maxBytes: getEnv().MAX_URL_BYTES }),
    );
    await refused(
      fetchRemoteFile(url, { maxBytes: getEnv().MAX_URL_BYTES, allowHosts: parseAllowList(`127.0.0.1:${port + 1}`) }),
    );
    await refused(fetchRemoteFile(url, { maxBytes: getEnv().MAX_URL_BYTES, allowHosts: parseAllowList("10.0.0.0/8") }));
    for (const entry of [`127.0.0.1:${port}`, "127.0.0.1", "127.0.0.0/8"]) {
      const file = await fetchRemoteFile(url, { maxBytes: getEnv().MAX_URL_BYTES, allowHosts: parseAllowList(entry) });
      expect(Buffer.from(file.bytes).equals(SAMPLE), entry).toBe(true);
    }
    // A listed name is trusted with whatever it resolves to; an unlisted localhost stays refused before DNS.
    const byName = `http://localhost:${port}/scan.png`;
    await refused(
      fetchRemoteFile(byName, { maxBytes: getEnv().MAX_URL_BYTES, allowHosts: parseAllowList(`127.0.0.1:${port}`) }),
    );
    const named = await fetchRemoteFile(byName, {
      maxBytes: getEnv().MAX_URL_BYTES,
      allowHosts: parseAllowList(`localhost:${port}`),
      resolveHost: async () => [{ address: "127.0.0.1", family: 4 }],
    });
    expect(named.bytes.length).toBe(SAMPLE.length);
  });

  it("every redirect hop is checked again: an allowed host cannot bounce the fetch to an unlisted private one", async () => {
    await refused(
      fetchRemoteFile(`http://127.0.0.1:${port}/to-private`, {
        maxBytes: getEnv().MAX_URL_BYTES,
        allowHosts: parseAllowList(`127.0.0.1:${port}`),
      }),
    );
  });

  describe("through POST /api/ocr/process", () => {
    withStore("memory");
    afterAll(() => services().pool.terminate());

    it("400 without the variable; 200 and the document's text with it", async () => {
      const account = await createAccount(5);
      const url = `http://127.0.0.1:${port}/scan.png`;
      await expectApiError(
        await callOcr({ imageUrl: url }, { key: account.key }),
        "invalid_request",
        /URL not allowed: 127\.0\.0\.1 is not a public address/,
      );
      const restore = setEnv({ URL_ALLOW_HOSTS: `127.0.0.1:${port}` });
      try {
        const body = await expectOcrOk(await callOcr({ imageUrl: url }, { key: account.key }));
        expect(body.inputSource).toBe("url");
        expect(characterErrorRate(body.extractedText, SAMPLE_TEXT)).toBeLessThan(0.03);
      } finally {
        restore();
      }
      expect(await account.balance()).toBe(4);
    });

    it("a malformed URL_ALLOW_HOSTS stops the configuration with a message naming the entry", async () => {
      const restore = setEnv({ URL_ALLOW_HOSTS: "minio:9000, http://x" });
      try {
        expect(() => configuredAllowList(getEnv())).toThrow(/URL_ALLOW_HOSTS: "http:\/\/x" is not a host name/);
      } finally {
        restore();
      }
    });
  });
});
