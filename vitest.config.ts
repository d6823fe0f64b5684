import path from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    alias: {
      "@": path.resolve(import.meta.dirname),
      // Modules that touch secrets import "server-only", which throws outside React's server condition (Next bundles
      // them with it); the tests run them in plain Node, as the server does.
      "server-only": path.resolve(import.meta.dirname, "node_modules/server-only/empty.js"),
    },
  },
  test: {
    environment: "node",
    include: ["tests/**/*.test.ts"],
    globalSetup: ["tests/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // OCR tests are CPU-bound and each file warms its own Tesseract workers: two files at a time fit 2 cores.
    maxWorkers: 2,
  },
});
