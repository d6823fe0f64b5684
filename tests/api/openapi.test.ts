import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { GET, OPTIONS } from "@/app/api/openapi.json/route";
import { errorStatus, type ErrorCode } from "@/lib/errors";
import { REQUEST_ID, callOcr, createAccount, tinyPng, withStore } from "./support";

withStore("memory");

type Json = Record<string, unknown>;

const asObject = (value: unknown): Json => {
  expect(value, "expected an object").toBeTypeOf("object");
  return value as Json;
};

/** Follow a JSON pointer such as `#/components/schemas/OcrResponse`. */
function resolvePointer(document: Json, ref: string): unknown {
  expect(ref.startsWith("#/")).toBe(true);
  return ref
    .slice(2)
    .split("/")
    .reduce<unknown>((node, part) => (node as Json | undefined)?.[part.replace(/~1/g, "/").replace(/~0/g, "~")], document);
}

function collectRefs(node: unknown, refs: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) collectRefs(item, refs);
  else if (node && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string") refs.push(value);
      else collectRefs(value, refs);
    }
  }
  return refs;
}

describe("GET /api/openapi.json", () => {
  let document: Json;
  let components: Json;

  /** A component schema as a zod validator (its references bundled as `$defs`). */
  function validatorFor(name: string): z.ZodType {
    const rewrite = (node: unknown): unknown => {
      if (Array.isArray(node)) return node.map(rewrite);
      if (!node || typeof node !== "object") return node;
      return Object.fromEntries(
        Object.entries(node).map(([key, value]) => [
          key,
          key === "$ref" && typeof value === "string" ? value.replace("#/components/schemas/", "#/$defs/") : rewrite(value),
        ]),
      );
    };
    const schemas = rewrite(asObject(components.schemas)) as Json;
    return z.fromJSONSchema({ ...(schemas[name] as Json), $defs: schemas } as Parameters<typeof z.fromJSONSchema>[0]);
  }

  beforeAll(async () => {
    const response = await GET(new Request("http://localhost:3000/api/openapi.json"));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("x-request-id")).toMatch(REQUEST_ID);
    document = asObject(await response.json());
    components = asObject(document.components);
  });

  it("is OpenAPI 3.1 with both key carriers as security schemes", () => {
    expect(document.openapi).toBe("3.1.0");
    expect(asObject(document.info).title).toBeTruthy();
    expect(components.securitySchemes).toEqual({
      ApiKeyHeader: expect.objectContaining({ type: "apiKey", in: "header", name: "x-api-key" }),
      BearerAuth: expect.objectContaining({ type: "http", scheme: "bearer" }),
    });
    expect(document.security).toEqual([{ ApiKeyHeader: [] }, { BearerAuth: [] }]);
  });

  it("resolves every $ref", () => {
    const refs = collectRefs(document);
    expect(refs.length).toBeGreaterThan(20);
    for (const ref of new Set(refs)) expect(resolvePointer(document, ref), ref).toBeDefined();
  });

  it("covers every status code of the error catalogue on POST /api/ocr/process (404 is MCP-only), with the error body", () => {
    const operation = asObject(asObject(asObject(document.paths)["/api/ocr/process"]).post);
    const responses = asObject(operation.responses);
    const expected = new Set(
      (Object.keys(errorStatus) as ErrorCode[]).filter((code) => code !== "not_found").map((code) => String(errorStatus[code])),
    );
    expect(Object.keys(responses).sort()).toEqual(["200", ...expected].sort());

    const documented = new Set<string>();
    for (const [status, value] of Object.entries(responses)) {
      const response = asObject(value);
      expect(asObject(response.headers)["x-request-id"], status).toBeDefined();
      if (status === "200") continue;
      const schema = asObject(asObject(asObject(response.content)["application/json"]).schema);
      const [base, narrowed] = schema.allOf as Json[];
      expect(base).toEqual({ $ref: "#/components/schemas/ErrorBody" });
      const codes = (asObject(asObject(asObject(asObject(narrowed!.properties).error).properties).code).enum as ErrorCode[]);
      for (const code of codes) {
        expect(String(errorStatus[code])).toBe(status);
        documented.add(code);
      }
    }
    expect([...documented].sort()).toEqual((Object.keys(errorStatus) as ErrorCode[]).filter((code) => code !== "not_found").sort());
    expect(asObject(asObject(responses["401"]).headers)["WWW-Authenticate"]).toBeDefined();
    expect(asObject(asObject(responses["405"]).headers).Allow).toBeDefined();
    expect(asObject(asObject(responses["429"]).headers)["Retry-After"]).toBeDefined();
    expect(asObject(asObject(responses["503"]).headers)["Retry-After"]).toBeDefined();
    expect(asObject(asObject(responses["200"]).headers)["x-credits-remaining"]).toBeDefined();
    expect((operation.parameters as Json[]).map((parameter) => parameter.name)).toContain("Idempotency-Key");
  });

  it("describes the request from the zod schema: strict, exactly one input, the three formats", () => {
    const schemas = asObject(components.schemas);
    const request = asObject(schemas.OcrRequest);
    expect(request.additionalProperties).toBe(false);
    expect(request.oneOf).toEqual([{ required: ["image"] }, { required: ["imageUrl"] }]);
    expect(Object.keys(asObject(request.properties))).toEqual(["image", "imageUrl", "options"]);
    const options = asObject(schemas.OcrOptions);
    expect(options.additionalProperties).toBe(false);
    expect(asObject(asObject(options.properties).format).enum).toEqual(["text", "json", "markdown"]);
    expect(asObject(asObject(document.paths)["/api/ocr/process"]).post).toMatchObject({
      requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/OcrRequest" } } } },
    });
  });

  it("describes the json format's document, and real answers satisfy the published schemas", async () => {
    const extracted = asObject(asObject(asObject(asObject(components.schemas).OcrResponse).properties).extractedText);
    expect(extracted.contentSchema).toEqual({ $ref: "#/components/schemas/OcrDocument" });

    const account = await createAccount(5);
    const response = await callOcr({ image: tinyPng().toString("base64"), options: { format: "json" } }, { key: account.key });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { extractedText: string };
    expect(validatorFor("OcrResponse").safeParse(body).success).toBe(true);
    expect(validatorFor("OcrDocument").safeParse(JSON.parse(body.extractedText)).success).toBe(true);
    expect(validatorFor("OcrResponse").safeParse({ ...body, inputSource: "ftp" }).success).toBe(false);

    const failed = await callOcr({}, { key: account.key });
    expect(validatorFor("ErrorBody").safeParse(await failed.json()).success).toBe(true);
  });

  it("answers the preflight and refuses other methods", async () => {
    const preflight = await OPTIONS(new Request("http://localhost:3000/api/openapi.json", { method: "OPTIONS" }));
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-methods")).toBe("GET, OPTIONS");
  });
});
