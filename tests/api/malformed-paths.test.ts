import { NextRequest } from "next/server";
import { describe, expect, it } from "vitest";
import * as jobRoute from "@/app/api/ocr/jobs/[id]/route";
import * as resultRoute from "@/app/api/ocr/jobs/[id]/result/route";
import { proxy, config } from "@/proxy";
import { createAccount, expectApiError, ocrRequest, withStore } from "./support";

/*
 * Issue 29, point 6: `GET /api/ocr/jobs/%ZZ` (and `/result`, `DELETE`, the settings download) was Next's bare `500`:
 * Next.js decodes the dynamic segment before the route runs. proxy.ts answers those paths first with the error body,
 * and the route's own decoding says the same should a request reach it.
 */

withStore("memory");

const BASE = "http://localhost:3000";

describe("a job path whose percent-encoding is malformed", () => {
  it.each([
    ["GET", "/api/ocr/jobs/%ZZ"],
    ["DELETE", "/api/ocr/jobs/%ZZ"],
    ["GET", "/api/ocr/jobs/%ZZ/result"],
    ["GET", "/api/ocr/jobs/job_%E0%A4%A/result?format=pdf"],
    ["GET", "/settings/jobs/%ZZ/result"],
  ])("%s %s → the proxy answers 400 with the error body, request id and security headers", async (method, path) => {
    const response = proxy(new NextRequest(`${BASE}${path}`, { method }));
    const body = await expectApiError(response, "invalid_request", /percent-encoding/);
    expect(response.headers.get("x-request-id")).toBe(body.requestId);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("content-security-policy")).toMatch(/default-src 'none'/);
  });

  it("the proxy's matcher covers the job routes with an id, not the bodies of other API routes", () => {
    expect(config.matcher).toContain("/api/ocr/jobs/:id/:rest*");
    expect(
      config.matcher.some(
        (pattern) =>
          pattern === "/api/ocr/jobs" || pattern.startsWith("/api/ocr/process") || pattern.startsWith("/api/mcp"),
      ),
    ).toBe(false);
  });

  it("a well-formed path passes the proxy (the route answers it)", () => {
    const response = proxy(new NextRequest(`${BASE}/api/ocr/jobs/job_abc`));
    expect(response.headers.get("x-middleware-next")).toBe("1");
  });

  it("the routes themselves: 400 invalid_request, not 500", async () => {
    const account = await createAccount(0);
    await expectApiError(
      await jobRoute.GET(ocrRequest(undefined, { key: account.key, method: "GET", url: `${BASE}/api/ocr/jobs/%ZZ` })),
      "invalid_request",
    );
    await expectApiError(
      await jobRoute.DELETE(
        ocrRequest(undefined, { key: account.key, method: "DELETE", url: `${BASE}/api/ocr/jobs/%ZZ` }),
      ),
      "invalid_request",
    );
    await expectApiError(
      await resultRoute.GET(
        ocrRequest(undefined, { key: account.key, method: "GET", url: `${BASE}/api/ocr/jobs/%ZZ/result` }),
      ),
      "invalid_request",
    );
  });
});
