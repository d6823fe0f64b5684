import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { GET, OPTIONS } from "@/app/api/openapi.json/route";
import * as jobsRoute from "@/app/api/ocr/jobs/route";
import * as jobRoute from "@/app/api/ocr/jobs/[id]/route";
import * as resultRoute from "@/app/api/ocr/jobs/[id]/result/route";
import { errorStatus, type ErrorCode } from "@/lib/api/errors";
import { JOB_ID_PATTERN, resetWorkQueue } from "@/lib/jobs";
import { REQUEST_ID, callOcr, createAccount, ocrRequest, tinyPng, withStore } from "./support";

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
    .reduce<unknown>(
      (node, part) => (node as Json | undefined)?.[part.replace(/~1/g, "/").replace(/~0/g, "~")],
      document,
    );
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
          key === "$ref" && typeof value === "string"
            ? value.replace("#/components/schemas/", "#/$defs/")
            : rewrite(value),
        ]),
      );
    };
    const schemas = rewrite(asObject(components.schemas)) as Json;
    expect(schemas[name], `components.schemas.${name}`).toBeDefined();
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

  // 404 and 410 are about jobs and MCP sessions, 403 refuses forged page forms, 501 answers a method no path serves:
  // none is an answer of this operation.
  const notProcessErrors: ErrorCode[] = ["not_found", "gone", "forbidden", "not_implemented"];

  it("covers every status code of the error catalogue on POST /api/ocr/process (but 403, 404, 410, 501), with the error body", () => {
    const operation = asObject(asObject(asObject(document.paths)["/api/ocr/process"]).post);
    const responses = asObject(operation.responses);
    const expected = new Set(
      (Object.keys(errorStatus) as ErrorCode[])
        .filter((code) => !notProcessErrors.includes(code))
        .map((code) => String(errorStatus[code])),
    );
    expect(Object.keys(responses).sort()).toEqual(["200", "202", ...expected].sort());

    const documented = new Set<string>();
    for (const [status, value] of Object.entries(responses)) {
      const response = asObject(value);
      expect(asObject(response.headers)["x-request-id"], status).toBeDefined();
      if (status === "200" || status === "202") continue;
      const schema = asObject(asObject(asObject(response.content)["application/json"]).schema);
      const [base, narrowed] = schema.allOf as Json[];
      expect(base).toEqual({ $ref: "#/components/schemas/ErrorBody" });
      const codes = asObject(asObject(asObject(asObject(narrowed!.properties).error).properties).code)
        .enum as ErrorCode[];
      for (const code of codes) {
        expect(String(errorStatus[code])).toBe(status);
        documented.add(code);
      }
    }
    expect([...documented].sort()).toEqual(
      (Object.keys(errorStatus) as ErrorCode[]).filter((code) => !notProcessErrors.includes(code)).sort(),
    );
    expect(asObject(asObject(responses["401"]).headers)["WWW-Authenticate"]).toBeDefined();
    expect(asObject(asObject(responses["405"]).headers).Allow).toBeDefined();
    expect(asObject(asObject(responses["429"]).headers)["Retry-After"]).toBeDefined();
    expect(asObject(asObject(responses["503"]).headers)["Retry-After"]).toBeDefined();
    expect(asObject(asObject(responses["200"]).headers)["x-credits-remaining"]).toBeDefined();
    expect((operation.parameters as Json[]).map((parameter) => parameter.name)).toContain("Idempotency-Key");
  });

  it("describes the request from the zod schema: strict, exactly one input, the seven formats", () => {
    const schemas = asObject(components.schemas);
    const request = asObject(schemas.OcrRequest);
    expect(request.additionalProperties).toBe(false);
    expect(request.oneOf).toEqual([{ required: ["image"] }, { required: ["imageUrl"] }]);
    expect(Object.keys(asObject(request.properties))).toEqual(["image", "imageUrl", "options", "webhook"]);
    const options = asObject(schemas.OcrOptions);
    expect(options.additionalProperties).toBe(false);
    expect(asObject(asObject(options.properties).format).enum).toEqual([
      "text",
      "json",
      "markdown",
      "hocr",
      "alto",
      "tsv",
      "pdf",
    ]);
    expect(asObject(asObject(document.paths)["/api/ocr/process"]).post).toMatchObject({
      requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/OcrRequest" } } } },
    });
  });

  it("describes the webhook event a job's end sends: its headers, its body's schema (the event types), the job's webhook field", () => {
    const post = asObject(asObject(asObject(document.webhooks).jobEnded).post);
    expect(
      (post.parameters as Array<{ name: string; in: string }>).map((parameter) => `${parameter.in}:${parameter.name}`),
    ).toEqual(["header:webhook-id", "header:webhook-timestamp", "header:webhook-signature"]);
    expect(post.requestBody).toMatchObject({
      content: { "application/json": { schema: { $ref: "#/components/schemas/WebhookEvent" } } },
    });
    const event = asObject(asObject(components.schemas).WebhookEvent);
    expect(asObject(asObject(event.properties).type).enum).toEqual([
      "job.succeeded",
      "job.failed",
      "job.cancelled",
      "webhook.test",
    ]);
    expect(Object.keys(asObject(asObject(asObject(components.schemas).JobView).properties))).toContain("webhook");
    expect(Object.keys(asObject(asObject(components.schemas).OcrRequest).properties as Json)).toContain("webhook");
  });

  it("describes the json format's document, and real answers satisfy the published schemas", async () => {
    const extracted = asObject(asObject(asObject(asObject(components.schemas).OcrResponse).properties).extractedText);
    expect(extracted.contentSchema).toEqual({ $ref: "#/components/schemas/OcrDocument" });

    const account = await createAccount(5);
    const response = await callOcr(
      { image: tinyPng().toString("base64"), options: { format: "json" } },
      { key: account.key },
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as { extractedText: string };
    expect(validatorFor("OcrResponse").safeParse(body).success).toBe(true);
    expect(validatorFor("OcrDocument").safeParse(JSON.parse(body.extractedText)).success).toBe(true);
    expect(validatorFor("OcrResponse").safeParse({ ...body, inputSource: "ftp" }).success).toBe(false);

    const failed = await callOcr({}, { key: account.key });
    expect(validatorFor("ErrorBody").safeParse(await failed.json()).success).toBe(true);
  });

  const operation = (path: string, method: string) => asObject(asObject(asObject(document.paths)[path])[method]);
  const responseOf = (path: string, method: string, status: string) =>
    asObject(asObject(operation(path, method).responses)[status]);
  const errorCodesOf = (path: string, method: string): ErrorCode[] =>
    Object.entries(asObject(operation(path, method).responses))
      .filter(([status]) => Number(status) >= 400)
      .flatMap(([, response]) => {
        const schema = asObject(asObject(asObject(asObject(response).content)["application/json"]).schema);
        const narrowed = (schema.allOf as Json[])[1]!;
        return asObject(asObject(asObject(asObject(narrowed.properties).error).properties).code).enum as ErrorCode[];
      });

  it("describes the searchable PDF: a job's result as application/pdf, and the sync 413 that names the job route", () => {
    const paths = asObject(document.paths);
    const result = asObject(asObject(asObject(paths["/api/ocr/jobs/{id}/result"]).get).responses);
    expect(Object.keys(asObject(asObject(result["200"]).content))).toEqual(["application/pdf", "application/json"]);
    const process = asObject(asObject(asObject(paths["/api/ocr/process"]).post).responses);
    expect(String(asObject(process["413"]).description)).toMatch(/format: "pdf"[^]*3 MB/);
  });

  it("describes the asynchronous jobs: every route and method, the job id, the query parameters and their headers", () => {
    const paths = asObject(document.paths);
    expect(Object.keys(asObject(paths["/api/ocr/jobs"])).sort()).toEqual(["get", "options", "post"]);
    expect(Object.keys(asObject(paths["/api/ocr/jobs/{id}"])).sort()).toEqual([
      "delete",
      "get",
      "options",
      "parameters",
    ]);
    expect(Object.keys(asObject(paths["/api/ocr/jobs/{id}/result"])).sort()).toEqual(["get", "options", "parameters"]);
    expect(
      [
        ["/api/ocr/jobs", "post"],
        ["/api/ocr/jobs", "get"],
        ["/api/ocr/jobs/{id}", "get"],
        ["/api/ocr/jobs/{id}", "delete"],
        ["/api/ocr/jobs/{id}/result", "get"],
      ].map(([path, method]) => operation(path!, method!).operationId),
    ).toEqual(["submitJob", "listJobs", "getJob", "cancelJob", "getJobResult"]);

    // The id: a path parameter whose pattern is the one the routes check.
    for (const path of ["/api/ocr/jobs/{id}", "/api/ocr/jobs/{id}/result"]) {
      const [id] = asObject(paths[path]).parameters as Json[];
      expect(id).toMatchObject({ name: "id", in: "path", required: true, schema: { pattern: JOB_ID_PATTERN.source } });
    }
    // Query parameters, from the zod schemas the routes parse with.
    const query = (path: string) =>
      Object.fromEntries((operation(path, "get").parameters as Json[]).map((parameter) => [parameter.name, parameter]));
    expect(query("/api/ocr/jobs")).toMatchObject({
      limit: { in: "query", required: false, schema: { type: "integer", minimum: 1, maximum: 100 } },
      cursor: { in: "query", required: false, schema: { type: "string" } },
    });
    expect(query("/api/ocr/jobs/{id}/result")).toMatchObject({
      format: { in: "query", schema: { enum: ["text", "json", "markdown", "hocr", "alto", "tsv", "pdf"] } },
      pages: { in: "query", schema: { type: "string" } },
    });

    // Submitting: 202 with Location, on both routes; the synchronous one takes Prefer and says Preference-Applied.
    const header = (response: Json, name: string) => asObject(response.headers)[name];
    for (const path of ["/api/ocr/jobs", "/api/ocr/process"]) {
      const accepted = responseOf(path, "post", "202");
      expect(header(accepted, "Location"), path).toEqual({ $ref: "#/components/headers/Location" });
      expect(asObject(accepted.content)["application/json"], path).toMatchObject({
        schema: { $ref: "#/components/schemas/JobView" },
      });
      expect(errorCodesOf(path, "post"), path).toEqual(
        expect.arrayContaining(["payload_too_large", "insufficient_credits", "rate_limited", "unavailable"]),
      );
      expect(errorCodesOf(path, "post"), path).not.toContain("gone");
    }
    expect(header(responseOf("/api/ocr/process", "post", "202"), "Preference-Applied")).toBeDefined();
    expect((operation("/api/ocr/process", "post").parameters as Json[]).map((parameter) => parameter.name)).toContain(
      "Prefer",
    );
    expect((operation("/api/ocr/jobs", "post").parameters as Json[]).map((parameter) => parameter.name)).toContain(
      "Idempotency-Key",
    );
    // What is special about submitting a job is said on its 413, 429 and 503.
    expect(String(responseOf("/api/ocr/jobs", "post", "413").description)).toContain("MAX_JOB_PAGES");
    expect(String(responseOf("/api/ocr/jobs", "post", "429").description)).toContain("MAX_QUEUED_PAGES_PER_ACCOUNT");
    expect(String(responseOf("/api/ocr/jobs", "post", "503").description)).toContain("REDIS_URL");

    // Reading a job: 404 (not_found) and 410 (gone) on status, cancel and result; Retry-After on the status; Link on a part.
    for (const [path, method] of [
      ["/api/ocr/jobs/{id}", "get"],
      ["/api/ocr/jobs/{id}", "delete"],
      ["/api/ocr/jobs/{id}/result", "get"],
    ] as const) {
      expect(errorCodesOf(path, method), `${method} ${path}`).toEqual(
        expect.arrayContaining(["not_found", "gone", "unauthorized", "rate_limited", "unavailable"]),
      );
      expect(header(responseOf(path, method, "503"), "Retry-After"), `${method} ${path}`).toBeDefined();
    }
    expect(header(responseOf("/api/ocr/jobs/{id}", "get", "200"), "Retry-After")).toEqual({
      $ref: "#/components/headers/JobRetryAfter",
    });
    expect(header(responseOf("/api/ocr/jobs/{id}/result", "get", "200"), "Link")).toEqual({
      $ref: "#/components/headers/Link",
    });
    expect(errorCodesOf("/api/ocr/jobs/{id}/result", "get")).toContain("invalid_request");
    expect(errorCodesOf("/api/ocr/jobs", "get")).not.toContain("not_found");
  });

  describe("real job answers satisfy the published schemas", () => {
    afterAll(async () => {
      await resetWorkQueue();
    });

    it("submit (both routes), status, list, result while queued, cancel; and the errors", async () => {
      const account = await createAccount(10);
      const url = (path: string) => `http://localhost:3000${path}`;
      const image = tinyPng().toString("base64");

      const submitted = await jobsRoute.POST(ocrRequest({ image }, { key: account.key, url: url("/api/ocr/jobs") }));
      expect(submitted.status).toBe(202);
      const job = (await submitted.json()) as { jobId: string; links: { self: string; result: string } };
      expect(validatorFor("JobView").safeParse(job).error).toBeUndefined();
      expect(submitted.headers.get("location")).toBe(job.links.self);

      const preferred = await callOcr({ image }, { key: account.key, headers: { prefer: "respond-async" } });
      expect(preferred.status).toBe(202);
      expect(preferred.headers.get("preference-applied")).toBe("respond-async");
      expect(validatorFor("JobView").safeParse(await preferred.json()).error).toBeUndefined();

      const get = (path: string, handler: (req: Request) => Promise<Response>) =>
        handler(ocrRequest(undefined, { key: account.key, method: "GET", url: url(path) }));
      const status = await get(job.links.self, jobRoute.GET);
      expect(status.status).toBe(200);
      expect(Number(status.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(validatorFor("JobView").safeParse(await status.json()).error).toBeUndefined();

      const list = await get("/api/ocr/jobs?limit=1", jobsRoute.GET);
      expect(list.status).toBe(200);
      const page = (await list.json()) as { jobs: unknown[]; nextCursor: string | null };
      expect(validatorFor("JobList").safeParse(page).error).toBeUndefined();
      expect(page.jobs).toHaveLength(1);
      expect(page.nextCursor).toEqual(expect.any(String));

      const result = await get(job.links.result, resultRoute.GET);
      expect(result.status).toBe(200);
      const part = await result.json();
      expect(validatorFor("JobResult").safeParse(part).error).toBeUndefined();
      expect(part).toMatchObject({ pages: "", missingPages: [{ page: 1, status: "pending" }], next: null });

      const cancelled = await jobRoute.DELETE(
        ocrRequest(undefined, { key: account.key, method: "DELETE", url: url(job.links.self) }),
      );
      expect(cancelled.status).toBe(200);
      const view = await cancelled.json();
      expect(validatorFor("JobView").safeParse(view).error).toBeUndefined();
      expect(view).toMatchObject({ status: "cancelled", creditsRefunded: 1 });

      // The errors the document lists for these operations, with the error body.
      const other = await createAccount(1);
      const notFound = [
        await get("/api/ocr/jobs/job_malformed", jobRoute.GET),
        await jobRoute.GET(ocrRequest(undefined, { key: other.key, method: "GET", url: url(job.links.self) })),
      ];
      for (const response of notFound) {
        expect(response.status).toBe(404);
        expect(validatorFor("ErrorBody").safeParse(await response.json()).error).toBeUndefined();
      }
      const outside = await get(`${job.links.result}?pages=2`, resultRoute.GET);
      expect(outside.status).toBe(400);
      expect(validatorFor("ErrorBody").safeParse(await outside.json()).error).toBeUndefined();
    });
  });

  it("answers the preflight and refuses other methods", async () => {
    const preflight = await OPTIONS(new Request("http://localhost:3000/api/openapi.json", { method: "OPTIONS" }));
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-methods")).toBe("GET, OPTIONS");
  });
});
