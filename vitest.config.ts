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
    // Ceilings for a hung test, not measures of speed: a busy machine (CI beside other servers) may take several
    // times longer than a quiet one, and a test asserts outcomes and orders, never how long it took.
    testTimeout: 180_000,
    hookTimeout: 300_000,
    expect: { poll: { timeout: 30_000, interval: 100 } },
    // OCR tests are CPU-bound and each file warms its own Tesseract workers: two files at a time fit 2 cores.
    maxWorkers: 2,
  },
});
