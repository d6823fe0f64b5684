import { describe, expect, it } from "vitest";
import * as creditsRoute from "@/app/api/credits/route";
import { creditsResponseSchema } from "@/lib/api/schemas";
import { callOcr, createAccount, expectApiError, expectOcrOk, tinyPng, withStore } from "./support";

const URL = "http://localhost:3000/api/credits";

function getCredits(headers: Record<string, string> = {}): Promise<Response> {
  return creditsRoute.GET(new Request(URL, { headers }));
}

describe("GET /api/credits (redis store)", () => {
  withStore("redis");

  it("answers the balance in the body and in x-credits-remaining, and charges nothing", async () => {
    const account = await createAccount(7);
    for (const headers of [{ "x-api-key": account.key }, { authorization: `Bearer ${account.key}` }] as Array<
      Record<string, string>
    >) {
      const response = await getCredits(headers);
      expect(response.status).toBe(200);
      expect(response.headers.get("x-credits-remaining")).toBe("7");
      expect(response.headers.get("x-request-id")).toMatch(/^req_/);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
      expect(creditsResponseSchema.parse(await response.json())).toEqual({
        success: true,
        userId: account.userId,
        balance: 7,
      });
    }
    expect(await account.balance()).toBe(7);
  });

  it("follows what OCR spends", async () => {
    const account = await createAccount(3);
    await expectOcrOk(await callOcr({ image: tinyPng("ONE PAGE").toString("base64") }, { key: account.key }));
    const body = creditsResponseSchema.parse(await (await getCredits({ "x-api-key": account.key })).json());
    expect(body.balance).toBe(2);
  });

  it("is 401 without a key or with an unknown one", async () => {
    await expectApiError(await getCredits(), "unauthorized");
    await expectApiError(
      await getCredits({ "x-api-key": "ocr_notarealkeynotarealkeynotarealkeynotarealk" }),
      "unauthorized",
    );
  });

  it("is 405 with Allow for other methods, and answers the CORS preflight", async () => {
    const post = await creditsRoute.POST(new Request(URL, { method: "POST" }));
    await expectApiError(post, "method_not_allowed");
    expect(post.headers.get("allow")).toContain("GET");
    const preflight = await creditsRoute.OPTIONS(new Request(URL, { method: "OPTIONS" }));
    expect(preflight.status).toBe(204);
  });
});
