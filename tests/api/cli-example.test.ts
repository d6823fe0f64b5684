import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { resolveConfig } from "@/cli/src/config";
import { cliExample } from "@/lib/api-docs/examples";

/*
 * Issue 39: the settings page's CLI snippet exported FETCH_MCP_SERVER_API_KEY where the README (and every other
 * example) uses OCR_API_KEY. It sets OCR_API_KEY now, and the CLI (cli/src/config.ts) gets the key from it even when
 * an older FETCH_MCP_SERVER_API_KEY is in the shell.
 */

const README = fs.readFileSync(path.resolve(import.meta.dirname, "../../README.md"), "utf8");

describe("the settings page's CLI snippet", () => {
  it("exports the README's variable, and the CLI reads the key from it whatever the shell held", () => {
    expect(README).toContain("export OCR_API_KEY=");
    const key = "ocr_snippet000000000000000000000000000000000";
    const { code } = cliExample({ origin: "http://localhost:3000", key });
    expect(code).toMatch(/^export OCR_API_KEY='ocr_snippet0+' OCR_BASE_URL=http:\/\/localhost:3000$/m);
    // Its lines before the commands, in a shell that held an older key under the CLI's first variable.
    const setup = code
      .split("\n")
      .filter((line) => !line.startsWith("npx "))
      .join("\n");
    const printed = execFileSync("bash", ["-c", `${setup}\nenv -0`], {
      env: {
        NODE_ENV: "test",
        PATH: process.env.PATH ?? "",
        FETCH_MCP_SERVER_API_KEY: "ocr_stale",
        OCR_API_KEY: "ocr_other",
      },
      encoding: "utf8",
    });
    const env = Object.fromEntries(
      printed
        .split("\0")
        .filter(Boolean)
        .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]),
    );
    expect(resolveConfig({}, env, "1").apiKey).toBe(key);
    expect(resolveConfig({}, env, "1").baseUrl).toBe("http://localhost:3000");
  });
});
