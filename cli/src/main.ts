import { parseArgs } from "node:util";
import { outputFormats, type OutputFormat } from "@/lib/vocabulary";
import { fetchBalance } from "./api";
import { isInsecureRemote, parseInteger, resolveConfig, type Config, type ConfigFlags } from "./config";
import { CliError, EXIT, Interrupted, UsageError, type ExitCode } from "./errors";
import { runExtract, type ExtractMode } from "./extract";
import { BALANCE_HELP, EXTRACT_HELP, JOBS_HELP, MAIN_HELP, MCP_HELP, WEBHOOKS_HELP } from "./help";
import { runJobs } from "./jobs";
import { runMcpBridge, type TransportChoice } from "./mcp-bridge";
import { runWebhooks } from "./webhooks";

/** Set by the bundler (cli/build.mjs) from package.json; `dev` when the sources run through tsx. */
declare const OCR_CLI_VERSION: string | undefined;
export const VERSION = typeof OCR_CLI_VERSION === "string" ? OCR_CLI_VERSION : "dev";

const COMMON_OPTIONS = ["base-url", "api-key", "timeout", "retries", "help"] as const;
const COMMAND_OPTIONS: Record<string, readonly string[]> = {
  extract: ["format", "pages", "lang", "out", "concurrency", "verbose", "async", "sync", "webhook"],
  balance: [],
  mcp: ["transport"],
  // Each `jobs` action takes some of these; cli/src/jobs.ts checks which.
  jobs: ["format", "pages", "out", "limit", "cursor", "json", "no-wait"],
  webhooks: ["secret", "file", "headers", "body"],
};
const HELP: Record<string, string> = {
  extract: EXTRACT_HELP,
  balance: BALANCE_HELP,
  mcp: MCP_HELP,
  jobs: JOBS_HELP,
  webhooks: WEBHOOKS_HELP,
};

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
  async: { type: "boolean" },
  sync: { type: "boolean" },
  limit: { type: "string" },
  cursor: { type: "string" },
  json: { type: "boolean" },
  "no-wait": { type: "boolean" },
  webhook: { type: "string" },
  secret: { type: "string" },
  file: { type: "string" },
  headers: { type: "string" },
  body: { type: "string" },
} as const;

type Values = ReturnType<typeof parse>["values"];

function parse(args: string[]) {
  return parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
}

/** Runs one command line; resolves with the exit code. Results go to stdout, everything else to stderr. */
export async function main(
  args: string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<ExitCode> {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  try {
    let parsed: ReturnType<typeof parse>;
    try {
      parsed = parse(args);
    } catch (error) {
      throw new UsageError(
        error instanceof Error ? error.message.replace(/\. To specify a positional argument.*$/s, "") : String(error),
      );
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
    if (!allowed)
      throw new UsageError(
        `unknown command ${JSON.stringify(command.slice(0, 40))}: use extract, jobs, balance, mcp or webhooks`,
      );
    if (values.help) {
      process.stdout.write(`${HELP[command]}\n`);
      return EXIT.ok;
    }
    for (const name of Object.keys(values)) {
      if (!allowed.includes(name) && !(COMMON_OPTIONS as readonly string[]).includes(name)) {
        throw new UsageError(`--${name} is not an option of \`ocr ${command}\``);
      }
    }

    // Verifying a saved delivery is local: no service, no key.
    if (command === "webhooks") {
      return await runWebhooks(
        rest,
        { secret: values.secret, file: values.file, headers: values.headers, body: values.body },
        { stdout: process.stdout, stderr: process.stderr, env },
      );
    }

    const config = resolveConfig(values satisfies ConfigFlags, env, VERSION);
    const prefix = command === "mcp" ? "ocr mcp" : "ocr";
    if (isInsecureRemote(config.baseUrl))
      say(`${prefix}: warning: ${config.baseUrl} is plain http; the API key travels unencrypted`);

    switch (command) {
      case "extract":
        return await whileInterruptible((signal) => extract(rest, values, config, signal));
      case "jobs":
        return await whileInterruptible((signal) => jobs(rest, values, config, signal));
      case "balance":
        if (rest.length > 0) throw new UsageError("`ocr balance` takes no arguments");
        process.stdout.write(`${await fetchBalance(config)}\n`);
        return EXIT.ok;
      case "mcp":
        if (rest.length > 0) throw new UsageError("`ocr mcp` takes no arguments");
        await runMcpBridge(config, {
          transport: transportChoice(values.transport),
          log: (line) => say(`ocr mcp: ${line}`),
        });
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

/**
 * Runs `work` with Ctrl-C turned into an abort (with {@link Interrupted}), so that a job being waited for is named
 * with how to get at it later rather than the process just dying; a second Ctrl-C exits at once.
 */
async function whileInterruptible(work: (signal: AbortSignal) => Promise<ExitCode>): Promise<ExitCode> {
  const controller = new AbortController();
  const second = () => process.exit(EXIT.interrupted);
  const first = () => {
    process.on("SIGINT", second);
    controller.abort(new Interrupted());
  };
  process.once("SIGINT", first);
  try {
    return await work(controller.signal);
  } finally {
    process.off("SIGINT", first);
    process.off("SIGINT", second);
  }
}

async function jobs(args: string[], values: Values, config: Config, signal: AbortSignal): Promise<ExitCode> {
  const format = values.format === undefined ? undefined : outputFormat(values.format);
  if (values.pages !== undefined) checkPages(values.pages);
  return runJobs(
    args,
    {
      format,
      pages: values.pages?.replace(/\s+/g, ""),
      out: values.out,
      limit: values.limit === undefined ? undefined : parseInteger(values.limit, "--limit", 1, 100),
      cursor: values.cursor === undefined ? undefined : checkCursor(values.cursor),
      json: values.json ?? false,
      noWait: values["no-wait"] ?? false,
    },
    config,
    { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd(), signal },
  );
}

function outputFormat(format: string): OutputFormat {
  if (!(outputFormats as readonly string[]).includes(format)) {
    throw new UsageError(
      `--format must be one of ${outputFormats.join(", ")} (got ${JSON.stringify(format.slice(0, 40))})`,
    );
  }
  return format as OutputFormat;
}

function checkPages(pages: string): void {
  if (!/^\s*\d+\s*(-\s*\d*\s*)?(,\s*\d+\s*(-\s*\d*\s*)?)*$/.test(pages)) {
    throw new UsageError(
      `--pages takes 1-based pages and ranges such as 1-3,5 or 7- (got ${JSON.stringify(pages.slice(0, 40))})`,
    );
  }
}

function checkCursor(cursor: string): string {
  if (!/^\d{1,20}$/.test(cursor)) throw new UsageError("--cursor takes the cursor a previous `ocr jobs list` printed");
  return cursor;
}

async function extract(inputs: string[], values: Values, config: Config, signal: AbortSignal): Promise<ExitCode> {
  if (inputs.length === 0) throw new UsageError("`ocr extract` needs at least one file or URL");
  const format = outputFormat(values.format ?? "text");
  if (values.pages !== undefined) checkPages(values.pages);
  if (values.async && values.sync) throw new UsageError("--async and --sync exclude each other");
  if (values.webhook !== undefined && values.sync) throw new UsageError("--webhook is for jobs: it excludes --sync");
  if (values.webhook !== undefined && !/^https?:\/\/\S+$/i.test(values.webhook)) {
    throw new UsageError(`--webhook takes an https URL (got ${JSON.stringify(values.webhook.slice(0, 40))})`);
  }
  // A webhook announces a job's end: with one, every document goes as a job.
  const mode: ExtractMode = values.async || values.webhook !== undefined ? "async" : values.sync ? "sync" : "auto";
  if (values.lang !== undefined && !/^[A-Za-z_]+(\+[A-Za-z_]+)*$/.test(values.lang)) {
    throw new UsageError(
      `--lang takes Tesseract codes joined by +, e.g. eng or eng+deu (got ${JSON.stringify(values.lang.slice(0, 40))})`,
    );
  }
  return runExtract(
    inputs,
    {
      format,
      pages: values.pages?.replace(/\s+/g, ""),
      language: values.lang,
      out: values.out,
      concurrency: values.concurrency === undefined ? 2 : parseInteger(values.concurrency, "--concurrency", 1, 8),
      verbose: values.verbose ?? false,
      mode,
      ...(values.webhook !== undefined && { webhook: values.webhook }),
    },
    config,
    { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, cwd: process.cwd(), signal },
  );
}

function transportChoice(value: string | undefined): TransportChoice {
  if (value === undefined) return "auto";
  if (value === "auto" || value === "http" || value === "sse") return value;
  throw new UsageError(`--transport must be auto, http or sse (got ${JSON.stringify(value.slice(0, 40))})`);
}
