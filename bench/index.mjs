// `npm run bench`: bundle bench/run.ts (and the lib code it imports) with esbuild, the way Next bundles the
// service, then run it with plain node. Running through a TypeScript loader instead would measure the
// loader too (it transforms pdf.js with inline source maps: ~1 s more cold start and ~100 MB more memory).
import { spawn } from "node:child_process";
import path from "node:path";
import { build } from "esbuild";
import { buildEngine } from "../scripts/build-engine.mjs";

const root = path.resolve(import.meta.dirname, "..");
const outfile = path.join(root, "node_modules/.cache/ocr-bench/run.mjs");
await build({
  entryPoints: [path.join(root, "bench/run.ts")],
  outfile,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  packages: "external",
  // lib/store marks itself server-only (Next's react-server condition); the bench runs it in plain Node, as tests do.
  alias: { "@": root, "server-only": path.join(root, "node_modules/server-only/empty.js") },
  logLevel: "warning",
});
// The engine runs in child processes started from its own bundle: build it from the current source too.
await buildEngine();
const child = spawn(process.execPath, [outfile, ...process.argv.slice(2)], {
  stdio: "inherit",
  // Measured as deployed: with the allocator setting docs/deploy.md recommends (glibc otherwise keeps freed page
  // buffers in per-thread arenas: peak RSS ~770 MiB instead of ~600, docs/decisions.md#malloc-mmap-threshold). Set it to 0 to see the default.
  env: { MALLOC_MMAP_THRESHOLD_: "1048576", ...process.env, OCR_BENCH_ROOT: root },
});
child.on("exit", (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
