import { afterEach, describe, expect, it } from "vitest";
import * as mcpRoute from "@/app/api/mcp/route";
import { LISTEN_HOST_KEY, isLoopbackHostname } from "@/lib/mcp/rebinding";
import { createAccount, expectApiError, withStore } from "../api/support";
import { pushEnv } from "../support/env";

/*
 * Issue 29, point 6: DNS-rebinding protection of /api/mcp while the server listens on a loopback address only (the dev
 * server; scripts/serve.mjs records the address). The conformance suite's `dns-rebinding-protection` scenario sends
 * `Host: evil.example.com` with a matching `Origin` and expects a 4xx, then its own loopback host and expects a 2xx.
 */

withStore("memory");

type Holder = { [LISTEN_HOST_KEY]?: string };
const listenOn = (hostname: string | undefined) => {
  (globalThis as Holder)[LISTEN_HOST_KEY] = hostname;
};
afterEach(() => listenOn(undefined));

const initialize = (key: string, host: string, origin?: string) =>
  mcpRoute.POST(
    new Request(`http://${host}/api/mcp?api_key=${key}`, {
      method: "POST",
      headers: {
        host,
        ...(origin !== undefined && { origin }),
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      }),
    }),
  );

describe("a server listening on loopback only", () => {
  it.each(["127.0.0.1", "localhost", "::1"])(
    "bound to %s: a foreign Host or Origin is 403 with the error body; loopback names are served",
    async (bound) => {
      listenOn(bound);
      const account = await createAccount(0);
      await expectApiError(
        await initialize(account.key, "evil.example.com", "http://evil.example.com"),
        "forbidden",
        /DNS-rebinding/,
      );
      await expectApiError(await initialize(account.key, "evil.example.com:3000"), "forbidden", /another host name/);
      await expectApiError(
        await initialize(account.key, "127.0.0.1:3000", "https://evil.example.com"),
        "forbidden",
        /another site/,
      );
      await expectApiError(await initialize(account.key, "127.0.0.1:3000", "null"), "forbidden");
      // A GET (the legacy SSE stream) is refused the same way.
      const get = await mcpRoute.GET(
        new Request("http://evil.example.com/api/mcp", {
          headers: { host: "evil.example.com", accept: "text/event-stream", "x-api-key": account.key },
        }),
      );
      await expectApiError(get, "forbidden");
      for (const [host, origin] of [
        ["127.0.0.1:3000", "http://127.0.0.1:3000"],
        ["localhost:3000", "http://localhost:5173"],
        ["[::1]:3000", undefined],
      ] as const) {
        expect((await initialize(account.key, host, origin)).status, `${host} ${origin}`).toBe(200);
      }
    },
  );

  it("bound to every interface or a public name: any Host is served (keys authenticate)", async () => {
    const account = await createAccount(0);
    for (const bound of ["0.0.0.0", "::", "ocr.example.com"]) {
      listenOn(bound);
      expect((await initialize(account.key, "evil.example.com", "http://evil.example.com")).status, String(bound)).toBe(
        200,
      );
    }
  });

  it("the standalone server.js (no scripts/serve.mjs) listens on HOSTNAME: loopback there is protected too, not on Vercel", async () => {
    const account = await createAccount(0);
    const answer = async (env: Record<string, string | undefined>) => {
      const restore = pushEnv(env);
      try {
        return (await initialize(account.key, "evil.example.com", "http://evil.example.com")).status;
      } finally {
        restore();
      }
    };
    expect(await answer({ HOSTNAME: "127.0.0.1", VERCEL: undefined })).toBe(403);
    expect(await answer({ HOSTNAME: "127.0.0.1", VERCEL: "1" })).toBe(200);
    expect(await answer({ HOSTNAME: "build-box-7", VERCEL: undefined })).toBe(200);
  });

  it("loopback names", () => {
    for (const name of ["localhost", "LOCALHOST.", "app.localhost", "127.0.0.1", "127.255.0.9", "::1", "[::1]"])
      expect(isLoopbackHostname(name), name).toBe(true);
    for (const name of ["evil.example.com", "localhost.evil.com", "127.0.0.1.nip.io", "0.0.0.0", "::", "10.0.0.1"])
      expect(isLoopbackHostname(name), name).toBe(false);
  });
});
