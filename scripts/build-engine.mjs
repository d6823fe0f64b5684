// Bundles the OCR engine process (lib/ocr/engine/main.ts and the engine code it uses) into one ESM file that the
// server starts as child processes (lib/ocr/pool/). Next bundles the server, not a child's entry, so the engine
// gets its own small build; next.config.ts traces the output into the standalone build and the functions.
//
//   node scripts/build-engine.mjs            → build/engine/ocr-worker.mjs (npm run build:engine; npm run build; tests)
//   node scripts/build-engine.mjs --watch    → rebuild on change (npm run dev)
//
// It also bundles the worker thread that makes searchable PDFs off the server's main thread
// (lib/ocr/render/pdf-thread.ts → build/engine/pdf-render.mjs; lib/ocr/render/pdf-off-thread.ts starts it).
//
// tesseract.js (which starts its own worker thread from a file), pdfjs-dist (whose fake worker imports a file beside
// it) and the native addons (@napi-rs/canvas, onnxruntime-node, koffi) stay external: they are loaded from
// node_modules at run time.
import path from "node:path";
import { parseArgs } from "node:util";
import * as esbuild from "esbuild";

const root = path.resolve(import.meta.dirname, "..");
const ENGINE_OUTFILE = path.join(root, "build/engine/ocr-worker.mjs");
const PDF_THREAD_OUTFILE = path.join(root, "build/engine/pdf-render.mjs");

/** esbuild options of the engine bundle. */
export function engineBuildOptions(outfile = ENGINE_OUTFILE) {
  return {
    entryPoints: [path.join(root, "lib/ocr/engine/main.ts")],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    alias: { "@": root },
    external: ["tesseract.js", "pdfjs-dist", "@napi-rs/canvas", "onnxruntime-node", "koffi"],
    sourcemap: "linked",
    legalComments: "none",
    logLevel: "warning",
    banner: {
      // Bundled CommonJS (zod's deps, if any) may call require() for Node built-ins.
      js: 'import { createRequire as __engineCreateRequire } from "node:module"; const require = __engineCreateRequire(import.meta.url);',
    },
  };
}

/** esbuild options of the searchable PDF's worker thread (pdf-lib bundled in; the canvas stays external). */
export function pdfThreadBuildOptions(outfile = PDF_THREAD_OUTFILE) {
  return {
    ...engineBuildOptions(outfile),
    entryPoints: [path.join(root, "lib/ocr/render/pdf-thread.ts")],
  };
}

/** Build the engine bundle (and the PDF thread's) once. */
export async function buildEngine(outfile = ENGINE_OUTFILE) {
  await Promise.all([esbuild.build(engineBuildOptions(outfile)), esbuild.build(pdfThreadBuildOptions())]);
  return outfile;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { watch: { type: "boolean" } } });
  if (values.watch) {
    const context = await esbuild.context(engineBuildOptions());
    await context.watch();
    await (await esbuild.context(pdfThreadBuildOptions())).watch();
    console.info(`engine: watching lib/ for changes → ${path.relative(root, ENGINE_OUTFILE)}`);
  } else {
    await buildEngine();
  }
}
