import type { NextConfig } from "next";

// Files the OCR engine loads at run time by path (worker script, wasm, language data, pdf.js worker and
// resources). Next's tracer cannot see them, so they are listed here; without them the standalone build
// (what a Vercel function gets) fails at run time. See STACK-NOTES.md.
const engineFiles = [
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
  "./node_modules/pdfjs-dist/package.json", // lib/ocr/pdf.ts finds fonts, cMaps and wasm from it
  "./node_modules/pdfjs-dist/legacy/build/pdf.worker.mjs",
  "./node_modules/pdfjs-dist/standard_fonts/**/*",
  "./node_modules/pdfjs-dist/cmaps/**/*",
  "./node_modules/pdfjs-dist/wasm/**/*",
];

const nextConfig: NextConfig = {
  output: "standalone",
  serverExternalPackages: ["tesseract.js", "tesseract.js-core", "pdfjs-dist", "@napi-rs/canvas"],
  outputFileTracingIncludes: {
    "/api/ocr/process": engineFiles,
    "/api/mcp": engineFiles,
    "/api/health": engineFiles,
  },
  poweredByHeader: false,
};

export default nextConfig;
