import { parseArgs } from "node:util";
import { outputFormats, type OutputFormat } from "@/lib/vocabulary";
import { fetchBalance } from "./api";
import { isInsecureRemote, parseInteger, resolveConfig, type Config, type ConfigFlags } from "./config";
import { CliError, EXIT, UsageError, type ExitCode } from "./errors";
import { runExtract } from "./extract";
import { BALANCE_HELP, EXTRACT_HELP, MAIN_HELP, MCP_HELP } from "./help";
import { runMcpBridge, type TransportChoice } from "./mcp-bridge";

/** Set by the bundler (cli/build.mjs) from package.json; `dev` when the sources run through tsx. */
declare const OCR_CLI_VERSION: string | undefined;
export const VERSION = typeof OCR_CLI_VERSION === "string" ? OCR_CLI_VERSION : "dev";

const COMMON_OPTIONS = ["base-url", "api-key", "timeout", "retries", "help"] as const;
const COMMAND_OPTIONS: Record<string, readonly string[]> = {
  extract: ["format", "pages", "lang", "out", "concurrency", "verbose"],
  balance: [],
  mcp: ["transport"],
};
const HELP: Record<string, string> = { extract: EXTRACT_HELP, balance: BALANCE_HELP, mcp: MCP_HELP };

const OPTIONS = {
  "base-url": { type: "string" },
  "api-key": { type: "string" },
  timeout: { type: "string" },
  retries: { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
  format: { type: "string", short: "f" },
  pages: { type: "string", short: "p" },
  lang: { type: "string", short: "l" },
  out: { type: "string", short: "o" },
  concurrency: { type: "string", short: "c" },
  verbose: { type: "boolean", short: "v" },
  transport: { type: "string" },
} as const;

type Values = ReturnType<typeof parse>["values"];

function parse(args: string[]) {
  return parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
}

/** Runs one command line; resolves with the exit code. Results go to stdout, everything else to stderr. */
export async function main(args: string[], env: Readonly<Record<string, string | undefined>> = process.env): Promise<ExitCode> {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  try {
    let parsed: ReturnType<typeof parse>;
    try {
      parsed = parse(args);
    } catch (error) {
      throw new UsageError(error instanceof Error ? error.message.replace(/\. To specify a positional argument.*$/s, "") : String(error));
    }
    const { values, positionals } = parsed;
    const [command, ...rest] = positionals;

    if (values.version) {
      process.stdout.write(`${VERSION}\n`);
      return EXIT.ok;
    }
    if (command === undefined || command === "help") {
      const topic = command === "help" ? rest[0] : undefined;
      if (command === undefined && !values.help) {
        say(MAIN_HELP);
        return EXIT.usage;
      }
      process.stdout.write(`${(topic && HELP[topic]) ?? MAIN_HELP}\n`);
      return EXIT.ok;
    }
    const allowed = COMMAND_OPTIONS[command];
    if (!allowed) throw new UsageError(`unknown command ${JSON.stringify(command.slice(0, 40))}: use extract, balance or mcp`);
    if (values.help) {
      process.stdout.write(`${HELP[command]}\n`);
      return EXIT.ok;
    }
    for (const name of Object.keys(values)) {
      if (!allowed.includes(name) && !(COMMON_OPTIONS as readonly string[]).includes(name)) {
        throw new UsageError(`--${name} is not an option of \`ocr ${command}\``);
      }
    }

    const config = resolveConfig(values satisfies ConfigFlags, env, VERSION);
    const prefix = command === "mcp" ? "ocr mcp" : "ocr";
    if (isInsecureRemote(config.baseUrl)) say(`${prefix}: warning: ${config.baseUrl} is plain http; the API key travels unencrypted`);

    switch (command) {
      case "extract":
        return await extract(rest, values, config);
      case "balance":
        if (rest.length > 0) throw new UsageError("`ocr balance` takes no arguments");
        process.stdout.write(`${await fetchBalance(config)}\n`);
        return EXIT.ok;
      case "mcp":
        if (rest.length > 0) throw new UsageError("`ocr mcp` takes no arguments");
        await runMcpBridge(config, { transport: transportChoice(values.transport), log: (line) => say(`ocr mcp: ${line}`) });
        return EXIT.ok;
    }
    throw new UsageError(`unknown command ${command}`);
  } catch (error) {
    if (error instanceof UsageError) {
      say(`ocr: ${error.message}`);
      say("Run `ocr --help` for usage.");
      return EXIT.usage;
    }
    if (error instanceof CliError) {
      say(`ocr: ${error.message}`);
      return error.exitCode;
    }
    say(`ocr: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return EXIT.other;
  }
}

async function extract(inputs: string[], values: Values, config: Config): Promise<ExitCode> {
  if (inputs.length === 0) throw new UsageError("`ocr extract` needs at least one file or URL");
  const format = values.format ?? "text";
  if (!(outputFormats as readonly string[]).includes(format)) {
    throw new UsageError(`--format must be one of ${outputFormats.join(", ")} (got ${JSON.stringify(format.slice(0, 40))})`);
  }
  if (values.pages !== undefined && !/^\s*\d+\s*(-\s*\d*\s*)?(,\s*\d+\s*(-\s*\d*\s*)?)*$/.test(values.pages)) {
    throw new UsageError(`--pages takes 1-based pages and ranges such as 1-3,5 or 7- (got ${JSON.stringify(values.pages.slice(0, 40))})`);
  }
  if (values.lang !== undefined && !/^[A-Za-z_]+(\+[A-Za-z_]+)*$/.test(values.lang)) {
    throw new UsageError(`--lang takes Tesseract codes joined by +, e.g. eng or eng+deu (got ${JSON.stringify(values.lang.slice(0, 40))})`);
  }
  return runExtract(
    inputs,
    {
      format: format as OutputFormat,
      pages: values.pages?.replace(/\s+/g, ""),
      language: values.lang,
      out: values.out,
      concurrency: values.concurrency === undefined ? 2 : parseInteger(values.concurrency, "--concurrency", 1, 8),
      verbose: values.verbose ?? false,
    },
    config,
    { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, cwd: process.cwd() },
  );
}

function transportChoice(value: string | undefined): TransportChoice {
  if (value === undefined) return "auto";
  if (value === "auto" || value === "http" || value === "sse") return value;
  throw new UsageError(`--transport must be auto, http or sse (got ${JSON.stringify(value.slice(0, 40))})`);
}
