import { describe, expect, it } from "vitest";
import { parseEnv } from "@/lib/env";
import { serviceOrigin } from "@/lib/oauth";

/*
 * Issue 39, point 4: one origin for every step of a sign-in on a default `npm start` (no SERVICE_URL, listening on
 * 0.0.0.0). The page Next.js renders after the sign-in action's redirect back to /oauth/authorize is fetched by Next
 * itself from the address the server listens on, with the browser request's headers: `Host: 0.0.0.0:3000`, and the
 * `X-Forwarded-Host` Next set from the browser's `Host`. It named https://0.0.0.0:3000, and the client got
 * invalid_target.
 */

const env = parseEnv({ NODE_ENV: "production" });

describe("serviceOrigin without SERVICE_URL", () => {
  it("names the browser's origin in the page Next renders after a server action's redirect", () => {
    const browser = new Headers({
      host: "localhost:3000",
      "x-forwarded-host": "localhost:3000",
      "x-forwarded-proto": "http",
    });
    const rerender = new Headers({
      host: "0.0.0.0:3000",
      "x-forwarded-host": "localhost:3000",
      "x-forwarded-proto": "http",
    });
    expect(serviceOrigin(env, browser)).toBe("http://localhost:3000");
    expect(serviceOrigin(env, rerender)).toBe("http://localhost:3000");
  });

  it("behind a proxy: the public name it forwards, https; without X-Forwarded-Host: Host", () => {
    const proxied = new Headers({
      host: "10.0.0.5:3000",
      "x-forwarded-host": "ocr.example.com",
      "x-forwarded-proto": "https",
    });
    expect(serviceOrigin(env, proxied)).toBe("https://ocr.example.com");
    expect(serviceOrigin(env, new Headers({ host: "127.0.0.1:4000" }))).toBe("http://127.0.0.1:4000");
    // A malformed forwarded name is ignored for the Host.
    expect(serviceOrigin(env, new Headers({ host: "localhost:4000", "x-forwarded-host": "a b/c" }))).toBe(
      "http://localhost:4000",
    );
  });

  it("SERVICE_URL, when set, is the origin whatever the headers say", () => {
    const configured = parseEnv({ NODE_ENV: "production", SERVICE_URL: "https://ocr.example.com" });
    expect(serviceOrigin(configured, new Headers({ host: "0.0.0.0:3000", "x-forwarded-host": "evil" }))).toBe(
      "https://ocr.example.com",
    );
  });
});
