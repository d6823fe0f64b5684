import { errorCatalogue, errorCodes } from "@/lib/api/error-catalogue";

/*
 * The API's reference tables, read off the OpenAPI document (lib/api-docs/openapi.ts, itself made from the zod schemas)
 * and the error catalogue: the endpoints, the fields of the request and of the answers, the query parameters, the
 * headers and the error codes. `npm run docs:api` (scripts/api-docs.ts) writes them into docs/api.md between
 * `<!-- generated: … -->` and `<!-- end generated -->`; the /docs page renders some of them; a unit test
 * (tests/api/api-docs.test.ts) fails when docs/api.md is not what they say now. Cells are inline Markdown whose only
 * markup is backticks, so the /docs page can render them too.
 */

type Json = { [key: string]: unknown };

export interface ReferenceTable {
  columns: string[];
  rows: string[][];
  /** A sentence said before the table (the schema's own description). */
  lead?: string;
}

const asJson = (value: unknown): Json => (value && typeof value === "object" ? (value as Json) : {});
const asString = (value: unknown): string => (typeof value === "string" ? value : "");

/** zod writes a plain `.int()` as ± `Number.MAX_SAFE_INTEGER`: no bound worth stating. */
const bound = (value: unknown): number | undefined =>
  typeof value === "number" && Math.abs(value) < Number.MAX_SAFE_INTEGER ? value : undefined;

/** Follow `#/components/schemas/…` once. */
function resolve(document: Json, schema: Json): Json {
  const ref = asString(schema.$ref);
  if (!ref) return schema;
  const name = ref.replace("#/components/schemas/", "");
  return asJson(asJson(asJson(document.components).schemas)[name]);
}

/** A JSON Schema's type, said briefly: `integer 1–100`, `` `text` \| `json` ``, `string (URI), at most 8192 characters`. */
export function typeOf(document: Json, schema: Json): string {
  const ref = asString(schema.$ref);
  if (ref) return `object (\`${ref.replace("#/components/schemas/", "")}\`)`;
  if (Array.isArray(schema.anyOf)) {
    return (schema.anyOf as unknown[]).map((option) => typeOf(document, asJson(option))).join(" or ");
  }
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  if (Array.isArray(schema.enum)) return (schema.enum as unknown[]).map((value) => `\`${String(value)}\``).join(" | ");
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [asString(schema.type)];
  const said = types.map((type) => {
    if (type === "null") return "`null`";
    if (type === "array") {
      const items = asJson(schema.items);
      const item = asString(items.$ref) ? typeOf(document, items) : asString(items.type) || "value";
      return `array of ${item}${item.endsWith("`)") ? "" : "s"}`;
    }
    if (type === "integer" || type === "number") {
      const [min, max] = [bound(schema.minimum), bound(schema.maximum)];
      if (min !== undefined && max !== undefined) return `${type} ${min}–${max}`;
      if (min !== undefined) return `${type} ≥ ${min}`;
      return type;
    }
    if (type === "string") {
      const format = asString(schema.format);
      const formatted = format === "uri" ? "string (URI)" : format ? `string (${format})` : "string";
      const max = bound(schema.maxLength);
      return max === undefined ? formatted : `${formatted}, at most ${max} characters`;
    }
    return type || "any";
  });
  return said.join(" or ");
}

/**
 * One row per property of a component schema: name, type, description. `expand` names properties whose own
 * properties are listed instead (`options` → `options.format`, …), with the property's description on its own row.
 */
function fieldRows(document: Json, schema: Json, expand: readonly string[] = [], prefix = ""): string[][] {
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const rows: string[][] = [];
  for (const [name, value] of Object.entries(asJson(schema.properties))) {
    const property = asJson(value);
    const path = `${prefix}${name}`;
    if (expand.includes(path)) {
      const inner = resolve(document, property);
      const description = asString(property.description) || asString(inner.description);
      if (description) rows.push([`\`${path}\``, "object", description]);
      rows.push(...fieldRows(document, inner, expand, `${path}.`));
      continue;
    }
    const type = typeOf(document, property);
    const description = asString(property.description) || asString(resolve(document, property).description);
    rows.push([`\`${path}\``, required.has(name) ? type : `${type}, optional`, description]);
  }
  return rows;
}

function schemaTable(document: Json, name: string, expand: readonly string[] = []): ReferenceTable {
  const schema = asJson(asJson(asJson(document.components).schemas)[name]);
  const lead = asString(schema.description);
  return {
    columns: ["field", "type", ""],
    rows: fieldRows(document, schema, expand),
    ...(lead && { lead: `\`${name}\`: ${lead}` }),
  };
}

const METHODS = ["get", "post", "put", "patch", "delete"] as const;

/** The REST operations (preflights left out): method and path, whether a key is needed, the summary. */
function endpointTable(document: Json): ReferenceTable {
  const rows: string[][] = [];
  for (const [path, item] of Object.entries(asJson(document.paths))) {
    for (const method of METHODS) {
      const operation = asJson(asJson(item)[method]);
      if (!operation.operationId) continue;
      const open = Array.isArray(operation.security) && operation.security.length === 0;
      rows.push([`\`${method.toUpperCase()} ${path}\``, open ? "no" : "yes", asString(operation.summary)]);
    }
  }
  return { columns: ["method + path", "key", "what"], rows };
}

function operation(document: Json, path: string, method: string): Json {
  return asJson(asJson(asJson(document.paths)[path])[method]);
}

function queryTable(document: Json, path: string, method: string): ReferenceTable {
  const parameters = (operation(document, path, method).parameters ?? []) as Json[];
  return {
    columns: ["query", "type", ""],
    rows: parameters
      .filter((parameter) => parameter.in === "query")
      .map((parameter) => [
        `\`${asString(parameter.name)}\``,
        typeOf(document, asJson(parameter.schema)),
        asString(parameter.description),
      ]),
  };
}

/**
 * Every header: the request's (the key's two carriers, the header parameters of the operations, the body's types) and
 * the responses' (their names as the responses use them, the descriptions of `components.headers`).
 */
function headerTable(document: Json): ReferenceTable {
  const rows: string[][] = [];
  const components = asJson(document.components);
  for (const scheme of Object.values(asJson(components.securitySchemes)).map(asJson)) {
    const name = scheme.type === "http" ? "`Authorization: Bearer`" : `\`${asString(scheme.name)}\``;
    rows.push([name, "request", asString(scheme.description)]);
  }
  const process = operation(document, "/api/ocr/process", "post");
  const types = Object.keys(asJson(asJson(process.requestBody).content));
  const body = asString(asJson(process.requestBody).description);
  rows.push(["`Content-Type`", "request", `${types.map((type) => `\`${type}\``).join(", ")}. ${body}`]);
  const seen = new Set<string>();
  const names = new Map<string, string>();
  for (const item of Object.values(asJson(document.paths)).map(asJson)) {
    for (const method of METHODS) {
      const op = asJson(item[method]);
      for (const parameter of (op.parameters ?? []) as Json[]) {
        const name = asString(parameter.name);
        if (parameter.in !== "header" || seen.has(name)) continue;
        seen.add(name);
        rows.push([`\`${name}\``, "request", asString(parameter.description)]);
      }
      for (const response of Object.values(asJson(op.responses)).map(asJson)) {
        for (const [name, header] of Object.entries(asJson(response.headers))) {
          const ref = asString(asJson(header).$ref).replace("#/components/headers/", "");
          if (ref && !names.has(ref)) names.set(ref, name);
        }
      }
    }
  }
  for (const [ref, header] of Object.entries(asJson(components.headers))) {
    rows.push([`\`${names.get(ref) ?? ref}\``, "response", asString(asJson(header).description)]);
  }
  return { columns: ["header", "direction", ""], rows };
}

/**
 * What an error code also means on an operation, beyond the catalogue's service-wide `when`: the `description` of its
 * example in the operation's error responses. One row per operation and code that has one, by status.
 */
function operationErrorTable(document: Json, operations: ReadonlyArray<readonly [string, string]>): ReferenceTable {
  const rows: Array<{ status: number; order: number; row: string[] }> = [];
  operations.forEach(([path, method], index) => {
    for (const [status, response] of Object.entries(asJson(operation(document, path, method).responses))) {
      const examples = asJson(asJson(asJson(asJson(response).content)["application/json"]).examples);
      for (const [code, example] of Object.entries(examples)) {
        const note = asString(asJson(example).description);
        if (!note || Number(status) < 400) continue;
        rows.push({
          status: Number(status),
          order: errorCodes.indexOf(code as (typeof errorCodes)[number]) * 100 + index,
          row: [status, `\`${code}\``, `\`${method.toUpperCase()} ${path}\``, note],
        });
      }
    }
  });
  rows.sort((a, b) => a.status - b.status || a.order - b.order);
  return { columns: ["status", "code", "operation", "on this operation"], rows: rows.map(({ row }) => row) };
}

/** The error catalogue (lib/api/error-catalogue.ts), from which the document's error responses are made too. */
function errorTable(): ReferenceTable {
  return {
    columns: ["status", "code", "when"],
    rows: errorCodes.map((code) => [String(errorCatalogue[code].status), `\`${code}\``, errorCatalogue[code].when]),
  };
}

/** The tables, by the name of their region in docs/api.md. */
export function referenceTables(document: Json): Record<string, ReferenceTable> {
  return {
    endpoints: endpointTable(document),
    "request-fields": schemaTable(document, "OcrRequest", ["options", "webhook"]),
    "response-fields": schemaTable(document, "OcrResponse"),
    "job-fields": schemaTable(document, "JobView"),
    "result-query": queryTable(document, "/api/ocr/jobs/{id}/result", "get"),
    "result-fields": schemaTable(document, "JobResult"),
    "list-query": queryTable(document, "/api/ocr/jobs", "get"),
    errors: errorTable(),
    "job-errors": operationErrorTable(document, [
      ["/api/ocr/jobs", "post"],
      ["/api/ocr/jobs", "get"],
      ["/api/ocr/jobs/{id}", "get"],
      ["/api/ocr/jobs/{id}", "delete"],
      ["/api/ocr/jobs/{id}/result", "get"],
    ]),
    headers: headerTable(document),
  };
}

/** A table as GitHub Markdown, its lead (if any) as a paragraph before it. */
export function markdownTable(table: ReferenceTable): string {
  const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ");
  const line = (cells: string[]) => `| ${cells.map(cell).join(" | ")} |`.replace(/ {2,}\|/g, " |");
  return [
    ...(table.lead ? [cell(table.lead), ""] : []),
    line(table.columns),
    `|${table.columns.map(() => "---").join("|")}|`,
    ...table.rows.map(line),
  ].join("\n");
}

const REGION = /(<!-- generated: ([\w-]+)[^\n]*-->\n)[^]*?(<!-- end generated -->)/g;

/**
 * `markdown` with each generated region's content replaced by its table. `unknown` lists regions with no table,
 * `missing` tables with no region (each must appear exactly once).
 */
export function renderGeneratedRegions(
  markdown: string,
  tables: Record<string, ReferenceTable>,
): { text: string; unknown: string[]; missing: string[] } {
  const unknown: string[] = [];
  const used = new Map<string, number>();
  const text = markdown.replace(REGION, (whole, start: string, name: string, end: string) => {
    const table = tables[name];
    if (!table) {
      unknown.push(name);
      return whole;
    }
    used.set(name, (used.get(name) ?? 0) + 1);
    return `${start}${markdownTable(table)}\n${end}`;
  });
  const missing = Object.keys(tables).filter((name) => used.get(name) !== 1);
  return { text, unknown, missing };
}
