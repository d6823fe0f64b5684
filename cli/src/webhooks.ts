import fs from "node:fs/promises";
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import { z } from "zod";
import { CliError, EXIT, UsageError, type ExitCode } from "./errors";

export interface WebhooksOptions {
  /** `whsec_…`; else the environment's `OCR_WEBHOOK_SECRET`. */
  secret?: string;
  /** A saved delivery: `{"headers": {…}, "body": "…"}`. */
  file?: string;
  /** Or its headers (`name: value` lines, as `curl -D` writes them, or a JSON object) … */
  headers?: string;
  /** … and its raw body. */
  body?: string;
}

interface WebhooksIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: Readonly<Record<string, string | undefined>>;
}

/** Standard Webhooks' tolerance (the `standardwebhooks` package's): a live receiver refuses older deliveries. */
const TOLERANCE_S = 5 * 60;

const savedDeliverySchema = z.object({
  headers: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
  body: z.union([z.string(), z.record(z.string(), z.unknown())]),
});

/**
 * `ocr webhooks verify`: check a saved delivery against the account's signing secret with the `standardwebhooks`
 * package, as a receiver would — so that a receiver being wired up can be told apart from a signature problem.
 */
export async function runWebhooks(args: string[], options: WebhooksOptions, io: WebhooksIo): Promise<ExitCode> {
  const [action, ...rest] = args;
  if (action !== "verify") throw new UsageError("`ocr webhooks` has one action: verify (see `ocr webhooks --help`)");
  if (rest.length > 0)
    throw new UsageError("`ocr webhooks verify` takes no arguments: --file, or --headers and --body");
  const secret = options.secret ?? io.env.OCR_WEBHOOK_SECRET;
  if (!secret)
    throw new UsageError(
      "the signing secret is missing: --secret whsec_… or OCR_WEBHOOK_SECRET (shown on /settings when created)",
    );
  if (!secret.startsWith("whsec_")) throw new UsageError("the signing secret looks like whsec_ followed by base64");
  if (options.file === undefined && (options.headers === undefined || options.body === undefined)) {
    throw new UsageError("give the saved delivery: --file saved.json, or --headers FILE and --body FILE");
  }
  if (options.file !== undefined && (options.headers !== undefined || options.body !== undefined)) {
    throw new UsageError("--file excludes --headers and --body");
  }
  const { headers, body, note } =
    options.file !== undefined ? await readSaved(options.file) : await readParts(options.headers!, options.body!);
  const say = (line: string) => io.stderr.write(`ocr: ${line}\n`);
  if (note) say(note);

  let webhook: Webhook;
  try {
    webhook = new Webhook(secret);
  } catch {
    throw new UsageError("the signing secret is not whsec_ followed by base64");
  }
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  const signature = headers["webhook-signature"];
  const missing = [!id && "webhook-id", !timestamp && "webhook-timestamp", !signature && "webhook-signature"].filter(
    Boolean,
  );
  if (missing.length > 0)
    throw new CliError(
      EXIT.input,
      `the delivery has no ${missing.join(", ")} header: is it a Standard Webhooks delivery?`,
    );
  const seconds = Number(timestamp);
  if (!/^\d{1,12}$/.test(timestamp!) || !Number.isSafeInteger(seconds))
    throw new CliError(EXIT.input, "webhook-timestamp is not a number of seconds");

  let event: unknown;
  let stale: string | undefined;
  try {
    event = webhook.verify(body, {
      "webhook-id": id!,
      "webhook-timestamp": timestamp!,
      "webhook-signature": signature!,
    });
  } catch (error) {
    if (!(error instanceof WebhookVerificationError) || !/timestamp too (old|new)/i.test(error.message)) {
      throw new CliError(
        EXIT.auth,
        `not verified: ${error instanceof Error ? error.message : String(error)} — a wrong secret, or a body changed after signing`,
      );
    }
    // A saved delivery is usually older than the 5 minutes a live receiver allows. Its signature is still checked,
    // with the package's own signing: the signature of this id, timestamp and body must be one of those sent.
    const expected = webhook.sign(id!, new Date(seconds * 1000), body);
    if (!signature!.split(" ").includes(expected)) {
      throw new CliError(
        EXIT.auth,
        "not verified: no signature matches — a wrong secret, or a body changed after signing",
      );
    }
    const age = Math.round(Date.now() / 1000 - seconds);
    stale = `${formatAge(Math.abs(age))} ${age >= 0 ? "old" : "in the future"}: a live receiver refuses it (Standard Webhooks allows ${TOLERANCE_S / 60} minutes, against replays)`;
    event = safeJson(body);
  }
  const described = z.object({ type: z.string() }).safeParse(event);
  say(
    `verified: ${described.success ? described.data.type : "event"} ${id}, signed ${new Date(seconds * 1000).toISOString()}`,
  );
  if (stale) say(`note: the signature is right; the delivery is ${stale}`);
  io.stdout.write(`${JSON.stringify(event, null, 2)}\n`);
  return EXIT.ok;
}

async function readText(file: string, what: string): Promise<string> {
  try {
    return await fs.readFile(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CliError(
      EXIT.input,
      `${what} ${file}: ${code === "ENOENT" ? "no such file" : `cannot read it (${code ?? "error"})`}`,
    );
  }
}

const lowerKeys = (headers: Record<string, string | string[]>) =>
  Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [
      name.trim().toLowerCase(),
      Array.isArray(value) ? value.join(", ") : value.trim(),
    ]),
  );

async function readSaved(file: string): Promise<{ headers: Record<string, string>; body: string; note?: string }> {
  let parsed;
  try {
    parsed = savedDeliverySchema.parse(JSON.parse(await readText(file, "--file")));
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(
      EXIT.input,
      `--file ${file}: not a saved delivery: expected JSON {"headers": {"webhook-id": …}, "body": "<the raw body>"}`,
    );
  }
  const { headers, body } = parsed;
  if (typeof body === "string") return { headers: lowerKeys(headers), body };
  // The body was saved parsed: our events are compact JSON, so serializing it again gives the bytes that were signed
  // unless something re-ordered or re-formatted it.
  return {
    headers: lowerKeys(headers),
    body: JSON.stringify(body),
    note: "the saved body is an object, not the raw text: checking it serialized again as compact JSON",
  };
}

async function readParts(
  headersFile: string,
  bodyFile: string,
): Promise<{ headers: Record<string, string>; body: string; note?: string }> {
  const raw = await readText(headersFile, "--headers");
  const body = await readText(bodyFile, "--body");
  const trimmed = raw.trim();
  if (trimmed.startsWith("{")) {
    const parsed = z.record(z.string(), z.union([z.string(), z.array(z.string())])).safeParse(safeJson(trimmed));
    if (!parsed.success)
      throw new CliError(EXIT.input, `--headers ${headersFile}: a JSON object of header names and values was expected`);
    return { headers: lowerKeys(parsed.data), body };
  }
  const headers: Record<string, string> = {};
  for (const line of raw.split(/\r?\n/)) {
    const match = /^([A-Za-z0-9-]+):\s*(.*)$/.exec(line);
    if (match) headers[match[1]!.toLowerCase()] = match[2]!.trim();
  }
  return { headers, body };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function formatAge(seconds: number): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86_400)} days`;
}
