import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { envSchema, IGNORED_VARIABLES, ignoredVariablesNotice, parseEnv } from "@/lib/env";
import { buildOpenApiDocument } from "@/lib/api-docs/openapi";
import { fetchSettings } from "@/lib/input";
import { keySettings } from "@/lib/keys";
import { ocrSettings } from "@/lib/ocr/model";
import { webhookSettings } from "@/lib/webhooks";

/*
 * lib/env.ts is the one schema of the configuration; .env.example and docs/configuration.md are written by hand. These
 * keep them its: every variable listed in both, and every value .env.example gives is the schema's default. And
 * vercel.json schedules every cron route, at most once a day (what a Hobby plan deploys).
 */

const ROOT = path.resolve(import.meta.dirname, "..");
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8");
const variables = Object.keys(envSchema.shape) as Array<keyof typeof envSchema.shape>;

describe("the configuration's documents", () => {
  it(".env.example names every variable of lib/env.ts, and each value it sets is the default", () => {
    const example = read(".env.example");
    const defaults = parseEnv({});
    const missing: string[] = [];
    for (const name of variables) {
      // `NAME=value`, or commented out (`# NAME=value`) where no value can stand for the default.
      const match = new RegExp(`^(# )?${name}=(.*)$`, "m").exec(example);
      if (!match) {
        missing.push(name);
        continue;
      }
      if (match[1]) continue;
      expect(parseEnv({ [name]: match[2] })[name], `${name}=${match[2]}`).toEqual(defaults[name]);
    }
    expect(missing, "variables missing from .env.example").toEqual([]);
  });

  it("docs/configuration.md has a table row for every variable", () => {
    const markdown = read("docs/configuration.md");
    const missing = variables.filter((name) => !new RegExp(`^\\| [^|]*\`${name}\``, "m").test(markdown));
    expect(missing, "variables without a row in docs/configuration.md").toEqual([]);
  });
});

describe("vercel.json", () => {
  const config = JSON.parse(read("vercel.json")) as { crons?: Array<{ path: string; schedule: string }> };

  it("schedules every cron route (app/api/cron/*), at most once a day", () => {
    const routes = fs
      .readdirSync(path.join(ROOT, "app/api/cron"), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && fs.existsSync(path.join(ROOT, "app/api/cron", entry.name, "route.ts")))
      .map((entry) => `/api/cron/${entry.name}`);
    expect(routes).toContain("/api/cron/jobs");
    expect((config.crons ?? []).map((cron) => cron.path).sort()).toEqual(routes.sort());
    for (const { path: cronPath, schedule } of config.crons ?? []) {
      // A fixed minute and hour: Vercel's Hobby plan refuses to deploy a cron that runs more often than daily.
      const [minute, hour, ...rest] = schedule.split(" ");
      expect(rest, cronPath).toHaveLength(3);
      expect(minute, cronPath).toMatch(/^\d{1,2}$/);
      expect(hour, cronPath).toMatch(/^\d{1,2}$/);
    }
  });
});

describe("variables no longer read", () => {
  it("are ignored, and one warning line names those that are set", () => {
    const set = { OCR_WORKERS: "3", WEBHOOK_RETRY_BASE_MS: "200", MCP_SSE_PING_MS: "soon", OCR_ENGINE_PROCESSES: "2" };
    const env = parseEnv(set);
    expect(env.OCR_ENGINE_PROCESSES).toBe(2);
    expect(env).not.toHaveProperty("OCR_WORKERS");
    expect(webhookSettings().retryBaseMs).toBe(60_000);
    expect(ignoredVariablesNotice(set)).toBe(
      "ignored (no longer read; see docs/configuration.md): WEBHOOK_RETRY_BASE_MS, MCP_SSE_PING_MS, OCR_WORKERS",
    );
  });

  it("says nothing when only the variables still read are set", () => {
    expect(ignoredVariablesNotice({ OCR_ENGINE_PROCESSES: "2", OCR_ENGINE_MEMORY_MB: "1024" })).toBeUndefined();
  });

  it("at most 31 operator-set variables; every ignored one is documented as such", () => {
    const platform = [
      "NODE_ENV",
      "PORT",
      "HOSTNAME",
      "VERCEL",
      "VERCEL_URL",
      "VERCEL_PROJECT_PRODUCTION_URL",
      "VERCEL_ENV",
    ];
    platform.push("VERCEL_AUTOMATION_BYPASS_SECRET", "KV_REST_API_URL", "KV_REST_API_TOKEN");
    // 30, and OCR_MODEL_DIR (issue 40: PaddleOCR's recognizer is a deployment's file, not a constant).
    expect(variables.filter((name) => !platform.includes(name)).length).toBeLessThanOrEqual(31);
    const docs = read("docs/configuration.md");
    for (const name of IGNORED_VARIABLES) expect(docs, name).toContain(`\`${name}\``);
    for (const name of IGNORED_VARIABLES) expect(variables, name).not.toContain(name);
  });

  it("the OpenAPI document states the modules' constants and the read limit derived from the configuration", () => {
    const env = parseEnv({ RATE_LIMIT_PER_MINUTE: "7", MAX_JOB_URL_BYTES: String(3 * 1024 * 1024) });
    expect(keySettings({}, env).readsPerMinute).toBe(70);
    const document = buildOpenApiDocument(env) as { info: { description: string } };
    const { timeoutMs, maxRedirects } = fetchSettings();
    expect(document.info.description).toContain(`URL fetch ${timeoutMs / 1000} s and ${maxRedirects} redirects`);
    expect(document.info.description).toContain(
      `image pixels ${Math.round(ocrSettings().maxImagePixels / 1e6)} megapixels`,
    );
    expect(document.info.description).toContain("7 requests per minute per key, and 70 reads");
    expect(JSON.stringify(document)).toContain(`within ${webhookSettings().timeoutMs / 1000} s is a delivery`);
    expect(JSON.stringify(document)).toContain("would pass 6 MB (twice `MAX_JOB_URL_BYTES`");
  });
});
