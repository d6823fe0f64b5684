import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { deprecationNotices, envSchema, parseEnv } from "@/lib/env";

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
    const defaults = envSchema.parse({});
    const missing: string[] = [];
    for (const name of variables) {
      // `NAME=value`, or commented out (`# NAME=value`) where no value can stand for the default.
      const match = new RegExp(`^(# )?${name}=(.*)$`, "m").exec(example);
      if (!match) {
        missing.push(name);
        continue;
      }
      if (match[1]) continue;
      expect(envSchema.parse({ [name]: match[2] })[name], `${name}=${match[2]}`).toEqual(defaults[name]);
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

describe("renamed variables", () => {
  it("OCR_WORKERS, OCR_INSPECT_WORKERS and OCR_WORKER_MEMORY_MB still work, each with a deprecation line", () => {
    const old = { OCR_WORKERS: "3", OCR_INSPECT_WORKERS: "1", OCR_WORKER_MEMORY_MB: "512" };
    expect(parseEnv(old)).toMatchObject({
      OCR_ENGINE_PROCESSES: 3,
      OCR_INSPECT_PROCESSES: 1,
      OCR_ENGINE_MEMORY_MB: 512,
    });
    expect(deprecationNotices(old)).toEqual([
      "OCR_WORKERS is deprecated: rename it OCR_ENGINE_PROCESSES",
      "OCR_INSPECT_WORKERS is deprecated: rename it OCR_INSPECT_PROCESSES",
      "OCR_WORKER_MEMORY_MB is deprecated: rename it OCR_ENGINE_MEMORY_MB",
    ]);
  });

  it("the new name wins when both are set, and the old one is said to be ignored", () => {
    const both = { OCR_WORKERS: "3", OCR_ENGINE_PROCESSES: "2" };
    expect(parseEnv(both).OCR_ENGINE_PROCESSES).toBe(2);
    expect(deprecationNotices(both)).toEqual(["OCR_WORKERS is deprecated and ignored: OCR_ENGINE_PROCESSES is set"]);
  });

  it("says nothing when only the new names are used", () => {
    expect(
      deprecationNotices({ OCR_ENGINE_PROCESSES: "2", OCR_INSPECT_PROCESSES: "2", OCR_ENGINE_MEMORY_MB: "1024" }),
    ).toEqual([]);
  });
});
