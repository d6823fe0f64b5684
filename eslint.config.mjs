import { defineConfig, globalIgnores } from "eslint/config";
import nextVitals from "eslint-config-next/core-web-vitals";
import nextTs from "eslint-config-next/typescript";

// Layering (docs/architecture.md). One `no-restricted-imports` rule per file glob; ESLint does not merge a rule's
// options across config objects, so each glob below gets the full list of what applies to it.

// A folder with an index.ts is imported through it from outside the folder: `@/lib/ocr`, not `@/lib/ocr/pool`.
// Tests are exempt (they test internals). Second entry points, each on purpose:
// - lib/accounts/current.ts: the signed-in account of a Next request (next/headers); kept out of the barrel so the
//   admin CLI (scripts/admin.ts, plain Node) can load lib/accounts.
// - lib/http/security-headers.ts: the headers next.config.ts and proxy.ts set; the barrel would pull the request
//   wrapper (credits, keys, the store) into the config and the proxy.
// - lib/http/cross-site-actions.ts: proxy.ts's answer to a cross-site server-action POST, for the same reason.
// - lib/http/malformed-path.ts: proxy.ts's answer to a path with malformed percent-encoding, for the same reason.
// - lib/http/cors.ts: the CORS headers, for the OpenAPI document (lib/api-docs); the barrel would pull the request
//   wrapper and through it the services and the engine pool into the API's description.
// - lib/http/jobs.ts: the job routes' answers; in the barrel it would pull lib/jobs (and the engine pool) into every
//   page that uses lib/http.
// - lib/ocr/model (a folder with its own index.ts): lib/ocr's light entry, the page model, OcrError, page selections;
//   `@/lib/ocr` is the reading entry, for the few layers that read documents (readingEntryOutside below).
// Single imports that go around a barrel for a reason say why with an eslint-disable comment at the import.
const BARRELS = [
  "accounts",
  "credits",
  "health",
  "http",
  "input",
  "intake",
  "jobs",
  "keys",
  "mcp",
  "oauth",
  "ocr",
  "store",
  "webhooks",
];
const SECOND_ENTRY_POINTS = {
  accounts: ["current"],
  http: ["security-headers", "cross-site-actions", "malformed-path", "cors", "jobs"],
  // A module's settings alone (constants and their pure builder), for lib/settings and the OpenAPI document: the
  // barrels bring the queues.
  jobs: ["settings"],
  ocr: ["model"],
  webhooks: ["settings"],
};
const deepImports = (except = []) =>
  BARRELS.filter((folder) => !except.includes(folder)).map((folder) => ({
    group: [
      `@/lib/${folder}/*`,
      `**/lib/${folder}/*`,
      ...(SECOND_ENTRY_POINTS[folder] ?? []).flatMap((file) => [
        `!@/lib/${folder}/${file}`,
        `!**/lib/${folder}/${file}`,
      ]),
      // A second entry that is a folder (lib/ocr/model) is entered through its own index.ts.
      ...(SECOND_ENTRY_POINTS[folder] ?? []).flatMap((file) => [
        `@/lib/${folder}/${file}/*`,
        `**/lib/${folder}/${file}/*`,
      ]),
    ],
    message: `Import lib/${folder} through its index.ts ("@/lib/${folder}"${(SECOND_ENTRY_POINTS[folder] ?? []).map((file) => ` or "@/lib/${folder}/${file}"`).join("")}), or add the export there.`,
  }));

// lib/ocr has two doors (docs/architecture.md): `@/lib/ocr/model` describes documents (types, zod schemas, constants,
// OcrError; no engine process reachable from it) and anyone may import it; `@/lib/ocr` reads documents through the
// engine pool, and only the layers that read import it: lib/intake (a document taken in, and read now), lib/jobs (a job's pages),
// lib/health (the self-test), lib/startup.ts (the pool warmed), lib/services.ts (the pool built), scripts/ and bench/. Not the API's contract
// (lib/api, lib/api-docs), MCP, HTTP, routes or pages.
const READING_ENTRY_USERS = ["intake", "jobs", "health"];
const readingEntryOutside = {
  // A pattern would also match every path under lib/ocr (gitignore's rules): the entry itself, by regex.
  regex: "^(@/lib/ocr|(.*/)?lib/ocr|(\\.\\./)+ocr)$",
  message:
    'Import what describes pages, formats and errors from "@/lib/ocr/model"; reading a document ("@/lib/ocr") is lib/intake\'s or lib/jobs\' work.',
};

// The engine reads bytes and returns text: no HTTP, storage, accounts, keys, credits or limits in it. Each folder is
// forbidden by alias and by relative path (`../store`).
const aliasAndRelative = (...names) =>
  names.flatMap((name) => [`@/lib/${name}`, `@/lib/${name}/*`, `**/../${name}`, `**/../${name}/*`]);
const engineForbidden = [
  {
    group: ["next", "next/*", "@/app/*", "**/app/*", ...aliasAndRelative("http", "mcp", "intake", "jobs")],
    message:
      "The engine (lib/ocr) knows nothing of HTTP, MCP, requests or jobs: its callers (lib/intake, lib/jobs) do.",
  },
  {
    group: aliasAndRelative("api", "api-docs"),
    message:
      "The engine throws its own OcrError (lib/ocr/model/ocr-error.ts); lib/jobs/engine-errors.ts maps it to the API's codes.",
  },
  {
    group: aliasAndRelative("store", "accounts", "keys"),
    message: "The engine (lib/ocr) does not reach storage, accounts or keys.",
  },
  {
    group: aliasAndRelative("credits", "request-scope"),
    message: "The engine (lib/ocr) does not charge or limit: lib/intake and lib/jobs do, around it.",
  },
];

// Routes and pages go through the domain (lib/intake, lib/credits, lib/keys, lib/accounts, lib/health), never
// to the store itself.
const routeForbidden = [
  {
    group: ["@/lib/store", "@/lib/store/*", "**/lib/store", "**/lib/store/*"],
    message: "Routes reach storage through the domain modules, not lib/store.",
  },
];

// Inside lib/ocr, by where the code runs (docs/architecture.md): model/ is shared; pool/ is the server's side of the
// engine processes; engine/ runs only inside an engine process (its entry, engine/main.ts, is bundled on its own by
// scripts/build-engine.mjs), so nothing outside engine/ imports it; render/ turns the page model into formats and
// needs neither the processes nor what runs in them; model/ imports none of the three. Relative paths are matched by
// the folder's name.
const ocrEngineOutside = {
  group: ["@/lib/ocr/engine", "@/lib/ocr/engine/*", "**/engine", "**/engine/*"],
  message:
    "lib/ocr/engine runs only inside an engine process: import it only from lib/ocr/engine (the pool talks to it through model/protocol.ts).",
};
const ocrModelForbidden = {
  group: [
    "@/lib/ocr/pool",
    "@/lib/ocr/pool/*",
    "**/pool",
    "**/pool/*",
    "@/lib/ocr/render",
    "@/lib/ocr/render/*",
    "**/render",
    "**/render/*",
    "node:child_process",
    "child_process",
  ],
  message: "lib/ocr/model is what the other parts share: it imports none of them (nor starts processes).",
};
const ocrRenderForbidden = {
  group: ["@/lib/ocr/pool", "@/lib/ocr/pool/*", "**/pool", "**/pool/*"],
  message:
    "lib/ocr/render renders the page model: it needs neither the engine processes (pool/) nor what runs in them (engine/).",
};

// Errors cross bundles (routes, instrumentation, the engine): recognise them with isApiError, never instanceof.
const noApiErrorInstanceof = {
  selector: "BinaryExpression[operator='instanceof'][right.name='ApiError']",
  message: "Use isApiError(error): each bundle has its own copy of the ApiError class.",
};
// no-restricted-imports does not see import(): the engine rule again for it (a path with an `engine` folder; \x2F is
// "/", which a selector's regular expression cannot hold).
const noEngineDynamicImport = {
  selector: "ImportExpression > Literal[value=/(^|\\x2F)engine(\\x2F|$)/]",
  message: "lib/ocr/engine runs only inside an engine process: import it only from lib/ocr/engine.",
};

const layering = (patterns) => ({ "no-restricted-imports": ["error", { patterns }] });

// The API's contract in two floors (docs/architecture.md). lib/api is the floor: the error type, the error catalogue
// and the request/response schemas, which every layer imports, so it imports nothing of the project but
// lib/vocabulary. lib/api-docs is the roof: the OpenAPI document, the reference tables and the examples are made from
// every layer's settings and schemas, so no lib/ module imports it (routes, pages, scripts and tests do).
const apiFloorForbidden = [
  {
    // By regex: a gitignore pattern cannot let lib/api's own files through once `@/lib/*` matched their folder.
    regex: "^(@/lib/(?!vocabulary$|api/)|\\.\\./)",
    message:
      "lib/api (errors, catalogue, schemas) is the floor everyone imports: it imports nothing of the project but lib/vocabulary.",
  },
];
const apiDocsOutside = {
  group: aliasAndRelative("api-docs"),
  message:
    "lib/api-docs (the OpenAPI document, reference tables, examples) imports every layer: only routes, pages, scripts and tests import it.",
};

// The leaves at lib/'s top level: anyone may import them, and they import nothing of the project (env.ts only the
// names in vocabulary.ts, which imports nothing), so loading the configuration never loads a domain module.
const LEAVES = ["lib/env.ts", "lib/vocabulary.ts", "lib/async.ts", "lib/error-log.ts", "lib/request-scope.ts"];
const leafForbidden = [
  {
    group: ["@/lib/*", "**/lib/*", "./*", "../*", "!@/lib/vocabulary"],
    message: "A leaf module (lib/env.ts, lib/vocabulary.ts, …) imports nothing of the project but lib/vocabulary.",
  },
];

export default defineConfig([
  ...nextVitals,
  ...nextTs,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-console": ["warn", { allow: ["warn", "error", "info"] }],
      "no-restricted-syntax": ["error", noApiErrorInstanceof, noEngineDynamicImport],
    },
  },
  {
    files: ["scripts/**", "bench/**", "cli/**"],
    rules: { "no-console": "off" },
  },
  { files: ["**/*.{ts,tsx,mts,mjs,js}"], rules: layering([...deepImports(), readingEntryOutside]) },
  { files: ["lib/**"], rules: layering([...deepImports(), readingEntryOutside, apiDocsOutside]) },
  { files: ["lib/startup.ts", "lib/services.ts"], rules: layering([...deepImports(), apiDocsOutside]) },
  { files: ["scripts/**"], rules: layering(deepImports()) },
  // The bench measures the engine's parts (the stages, table detection), as tests do.
  { files: ["bench/**"], rules: layering(deepImports(["ocr"])) },
  { files: ["lib/ocr/**"], rules: layering([...engineForbidden, ocrEngineOutside, ...deepImports(["ocr"])]) },
  {
    files: ["lib/ocr/engine/**"],
    rules: {
      ...layering([...engineForbidden, ...deepImports(["ocr"])]),
      "no-restricted-syntax": ["error", noApiErrorInstanceof],
    },
  },
  {
    files: ["lib/ocr/model/**"],
    rules: layering([...engineForbidden, ocrEngineOutside, ocrModelForbidden, ...deepImports(["ocr"])]),
  },
  {
    files: ["lib/ocr/render/**"],
    rules: layering([...engineForbidden, ocrEngineOutside, ocrRenderForbidden, ...deepImports(["ocr"])]),
  },
  { files: ["app/**"], rules: layering([...routeForbidden, ...deepImports(), readingEntryOutside]) },
  // Barrels are used by their own folder with relative imports; tests may import internals.
  ...BARRELS.filter((folder) => folder !== "ocr").map((folder) => ({
    files: [`lib/${folder}/**`],
    rules: layering([
      ...deepImports([folder]),
      ...(READING_ENTRY_USERS.includes(folder) ? [] : [readingEntryOutside]),
      apiDocsOutside,
    ]),
  })),
  { files: ["lib/api/**"], rules: layering(apiFloorForbidden) },
  { files: ["lib/api-docs/**"], rules: layering([...deepImports(), readingEntryOutside]) },
  { files: LEAVES, rules: layering(leafForbidden) },
  {
    files: ["tests/**"],
    rules: { "no-restricted-imports": "off", "no-restricted-syntax": ["error", noApiErrorInstanceof] },
  },
  globalIgnores([
    ".next/**",
    ".next-test/**",
    ".next-test-2/**",
    "out/**",
    "build/**",
    "next-env.d.ts",
    "tests/.generated/**",
    "tests/artifacts/**",
    "cli/dist/**",
  ]),
]);
