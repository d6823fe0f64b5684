import path from "node:path";
import { defineConfig } from "vitest/config";
import LongestFirst from "./tests/support/sequencer";

/*
 * The tests in four tiers (vitest projects), by what they need beside Node:
 * - unit: nothing — no engine process, no Redis, no browser; seconds. `npm run test:unit`.
 * - redis: the test Redis (REDIS_URL, default 127.0.0.1:6379), no engine process. `npm run test:redis`.
 * - engine: the OCR engine processes (Tesseract, PaddleOCR, pdf.js), most with Redis too: every file not listed in
 *   another tier, so a new test lands here unless it is listed as cheaper. `npm run test:engine`.
 * - browser: Chromium and the development servers (tests/browser/). `npm run test:browser`.
 * `npm test` runs all four. The unit and redis tiers refuse what they do not have (tests/support/tier-guard.ts): a file
 * listed in the wrong tier fails there at once, saying where it belongs (docs/decisions.md#test-tiers).
 */
const UNIT = [
  "tests/async.test.ts",
  "tests/import-cycles.test.ts",
  "tests/configuration.test.ts",
  "tests/api/api-docs.test.ts",
  "tests/api/client-ip.test.ts",
  "tests/oauth/origin.test.ts",
  "tests/api/cli-example.test.ts",
  "tests/api/error-catalogue.test.ts",
  "tests/api/examples-node.test.ts",
  "tests/api/malformed-paths.test.ts",
  "tests/api/process-errors.test.ts",
  "tests/cli/units.test.ts",
  "tests/credits/ledger-csv.test.ts",
  "tests/input/address.test.ts",
  "tests/jobs/poll.test.ts",
  "tests/jobs/work-services.test.ts",
  "tests/input/base64.test.ts",
  "tests/input/fetch-remote-guard.test.ts",
  "tests/input/fetch-remote-pinning.test.ts",
  "tests/input/fetch-remote.test.ts",
  "tests/input/post-remote.test.ts",
  "tests/keys/base58.test.ts",
  "tests/keys/snippets.test.ts",
  "tests/limits/in-flight.test.ts",
  "tests/mcp/rebinding.test.ts",
  "tests/mcp/tool-calls.test.ts",
  "tests/ocr/detect.test.ts",
  "tests/ocr/entries.test.ts",
  "tests/ocr/huge-numbers.test.ts",
  "tests/ocr/image-info.test.ts",
  "tests/ocr/languages.test.ts",
  "tests/ocr/markdown.test.ts",
  "tests/ocr/metrics.test.ts",
  "tests/ocr/paddle-layout.test.ts",
  "tests/ocr/paddle.test.ts",
  "tests/ocr/pages.test.ts",
  "tests/ocr/pdf-runtime.test.ts",
  "tests/ocr/pdf-streams.test.ts",
  "tests/ocr/pool-parts.test.ts",
  "tests/ocr/layout-order.test.ts",
  "tests/ocr/reading-order.test.ts",
  "tests/ocr/review-rule.test.ts",
  "tests/ocr/second-reading.test.ts",
  "tests/ocr/text-size.test.ts",
  "tests/ocr/tiff.test.ts",
  "tests/server-only.test.ts",
  "tests/setup/check-node.test.ts",
  "tests/webhooks/units.test.ts",
];
const REDIS = [
  "tests/accounts/accounts.test.ts",
  "tests/accounts/admin-cli.test.ts",
  "tests/api/cron.test.ts",
  "tests/api/key-failures.test.ts",
  "tests/credits/credits.test.ts",
  "tests/credits/reservations.test.ts",
  "tests/credits/test-credits.test.ts",
  "tests/jobs/result-reads.test.ts",
  "tests/jobs/swept.test.ts",
  "tests/keys/keys.test.ts",
  "tests/mcp/auth.test.ts",
  "tests/mcp/stream-caps.test.ts",
  "tests/oauth/refusals.test.ts",
  "tests/oauth/app-reach.test.ts",
  "tests/store/command-budget.test.ts",
  "tests/store/config.test.ts",
  "tests/store/contract.test.ts",
  "tests/store/redis-link.test.ts",
  "tests/store/upstash-bridge.test.ts",
  "tests/webhooks/fairness.test.ts",
  "tests/webhooks/rotation.test.ts",
];
const BROWSER = ["tests/browser/**/*.test.ts"];

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
    // No `include` here: a project's would be added to it, not replace it (each project names its files).
    globalSetup: ["tests/global-setup.ts"],
    // Ceilings for a hung test, not measures of speed: a busy machine (CI beside other servers) may take several
    // times longer than a quiet one, and a test asserts outcomes and orders, never how long it took.
    testTimeout: 180_000,
    hookTimeout: 300_000,
    expect: { poll: { timeout: 30_000, interval: 100 } },
    // OCR tests are CPU-bound and each file warms its own Tesseract workers: two files at a time fit 2 cores.
    maxWorkers: 2,
    // The longest files first, whatever their tier (tests/durations.json; tests/support/sequencer.ts).
    sequence: { sequencer: LongestFirst },
    // With VITEST_TIMINGS=<file> (.ci/run sets it), the results also go there as JSON: CI prints the slowest files last.
    ...(process.env.VITEST_TIMINGS && {
      reporters: ["default", "json"],
      outputFile: { json: process.env.VITEST_TIMINGS },
    }),
    projects: [
      {
        extends: true,
        test: { name: "unit", include: UNIT, env: { TEST_TIER: "unit" }, setupFiles: ["tests/support/tier-guard.ts"] },
      },
      {
        extends: true,
        test: {
          name: "redis",
          include: REDIS,
          env: { TEST_TIER: "redis" },
          setupFiles: ["tests/support/tier-guard.ts"],
        },
      },
      {
        extends: true,
        test: { name: "engine", include: ["tests/**/*.test.ts"], exclude: [...UNIT, ...REDIS, ...BROWSER] },
      },
      { extends: true, test: { name: "browser", include: BROWSER } },
    ],
  },
});
