// Bundles the CLI (cli/src/ocr.ts and its dependencies: zod, the MCP SDK, standardwebhooks) into one ESM file with a node shebang,
// so the `ocr` bin runs with plain Node ≥ 22.13 and needs no node_modules at run time.
//
//   node cli/build.mjs                      → cli/dist/ocr.mjs (npm run build:cli; also the `prepare` script)
//   node cli/build.mjs --outfile /tmp/x.mjs → elsewhere (the tests)
//   node cli/build.mjs --if-available       → skip quietly when esbuild is not installed (npm ci --omit=dev)
import { chmod, readFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";

const root = path.resolve(import.meta.dirname, "..");
const { values } = parseArgs({ options: { outfile: { type: "string" }, "if-available": { type: "boolean" } } });
const outfile = path.resolve(values.outfile ?? path.join(root, "cli/dist/ocr.mjs"));

let esbuild;
try {
  esbuild = await import("esbuild");
} catch (error) {
  if (values["if-available"]) {
    console.warn("cli/build.mjs: esbuild is not installed (dev dependency); the ocr CLI was not built");
    process.exit(0);
  }
  throw error;
}

const { version } = JSON.parse(await readFile(path.join(root, "package.json"), "utf8"));
await esbuild.build({
  entryPoints: [path.join(root, "cli/src/ocr.ts")],
  outfile,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  // Type-only imports from lib/ are erased; anything else from "@/…" would be a mistake caught by tsc.
  alias: { "@": root },
  define: { OCR_CLI_VERSION: JSON.stringify(version) },
  banner: {
    // Generated code is not linted (`eslint .` would otherwise read it after a build). Some bundled CommonJS
    // modules (ajv, via the MCP SDK) call require() for Node built-ins.
    js: [
      "#!/usr/bin/env node",
      "/* eslint-disable */",
      "import { createRequire as __ocrCreateRequire } from 'node:module';",
      "const require = __ocrCreateRequire(import.meta.url);",
    ].join("\n"),
  },
  // Whitespace and syntax only: names stay readable in stack traces. Also drops the dependencies' comments (their
  // eslint directives would be reported as unused).
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: "none",
  logLevel: "warning",
});
await chmod(outfile, 0o755);
