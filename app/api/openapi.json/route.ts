import { methodNotAllowed, preflight, withRequest } from "@/lib/http";
import { getOpenApiDocument } from "@/lib/api-docs/openapi";

export const runtime = "nodejs";

const methods = ["GET"];

// GET /api/openapi.json – the OpenAPI 3.1 description of the REST API, generated from its zod schemas
export const GET = withRequest(async ({ env }) =>
  Response.json(getOpenApiDocument(env), { headers: { "Cache-Control": "public, max-age=300" } }),
);

export const OPTIONS = preflight(methods);
export const POST = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);
