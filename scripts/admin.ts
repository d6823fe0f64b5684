/**
 * Operator CLI over the same store and configuration as the server.
 *
 *   npm run admin -- create-user --email E --password P
 *   npm run admin -- create-key --email E [--name N]     (prints only the key)
 *   npm run admin -- grant --email E --credits N
 *   npm run admin -- balance --email E
 *   npm run admin -- revoke-key --email E --start S
 *   npm run admin -- webhook-secret --email E [--rotate]   (prints only the new secret)
 *
 * Exit codes: 0 done, 2 usage error, 1 anything else. Results go to stdout, messages to stderr.
 * It shares data with a running server only when both use Redis (the memory store lives inside one process).
 * Run it through `npm run admin` (or `tsx --conditions=react-server scripts/admin.ts`): the modules it uses that
 * handle keys, passwords and the store's credentials import "server-only", which loads only under that condition.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { getAccountByEmail, signUp, type Account } from "@/lib/accounts";
import { getBalance, grantCredits } from "@/lib/credits";
import { getEnv } from "@/lib/env";
import { isApiError } from "@/lib/api/errors";
import { createApiKey, revokeApiKeyByStart } from "@/lib/keys";
import { getStore, resetStore } from "@/lib/store";
import { getWebhookAccount, rotateWebhookSecret } from "@/lib/webhooks";

const USAGE = `Usage: npm run admin -- <command> [options]

Commands:
  create-user --email E --password P   create an account (with FREE_CREDITS); prints its user id
  create-key  --email E [--name N]     create an API key; prints only the key
  grant       --email E --credits N    add N credits; prints the new balance
  balance     --email E                print the credit balance
  revoke-key  --email E --start S      revoke the active key whose visible start is S
  webhook-secret --email E [--rotate]  create the account's webhook signing secret, or with --rotate replace it (the
                                       old one keeps signing for 24 h); prints only the new secret, shown this once

The store is chosen like the server's: UPSTASH_REDIS_REST_URL/_TOKEN, KV_REST_API_URL/_TOKEN, or REDIS_URL
(keys under REDIS_PREFIX); without them, a throwaway in-memory store.`;

class UsageError extends Error {}

/** Load .env files the way Next.js does for the server (variables already set win; the first file wins). */
function loadEnvFiles(): void {
  const mode = process.env.NODE_ENV === "production" ? "production" : "development";
  for (const name of [`.env.${mode}.local`, ".env.local", `.env.${mode}`, ".env"]) {
    const file = path.resolve(process.cwd(), name);
    if (existsSync(file)) process.loadEnvFile(file);
  }
}

function required(value: string | undefined, option: string): string {
  if (!value) throw new UsageError(`--${option} is required`);
  return value;
}

function positiveInteger(value: string | undefined, option: string): number {
  const number = Number(required(value, option));
  if (!Number.isSafeInteger(number) || number < 1) throw new UsageError(`--${option} must be a positive whole number`);
  return number;
}

async function accountFor(email: string | undefined): Promise<Account> {
  const address = required(email, "email");
  const account = await getAccountByEmail(getStore(), address);
  if (!account) throw new Error(`No account with e-mail ${address.trim().toLowerCase()}`);
  return account;
}

async function run(argv: string[]): Promise<string> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      email: { type: "string" },
      password: { type: "string" },
      name: { type: "string" },
      credits: { type: "string" },
      start: { type: "string" },
      rotate: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [command, ...extra] = positionals;
  if (values.help) return USAGE;
  if (!command) throw new UsageError("no command given");
  if (extra.length > 0) throw new UsageError(`unexpected argument: ${extra[0]}`);

  switch (command) {
    case "create-user": {
      const account = await signUp(
        getStore(),
        { email: required(values.email, "email"), password: required(values.password, "password") },
        { env: getEnv(), operator: true },
      );
      return account.id;
    }
    case "create-key": {
      const account = await accountFor(values.email);
      const { key } = await createApiKey(getStore(), { userId: account.id, name: values.name ?? "admin CLI" });
      return key;
    }
    case "grant": {
      const account = await accountFor(values.email);
      const credits = positiveInteger(values.credits, "credits");
      return String((await grantCredits(getStore(), { userId: account.id, credits })).balance);
    }
    case "balance": {
      const account = await accountFor(values.email);
      return String(await getBalance(getStore(), account.id));
    }
    case "revoke-key": {
      const account = await accountFor(values.email);
      const revoked = await revokeApiKeyByStart(getStore(), {
        userId: account.id,
        start: required(values.start, "start"),
      });
      return `revoked ${revoked.start}… (${revoked.name})`;
    }
    case "webhook-secret": {
      const account = await accountFor(values.email);
      const current = await getWebhookAccount(getStore(), account.id);
      // A secret is shown once, when it is made: an existing one cannot be printed, only replaced.
      if (current.hasSecret && !values.rotate) {
        throw new Error(
          `${account.email} already has a webhook secret (${current.secretHint}, created ${current.secretCreatedAt}); ` +
            "--rotate replaces it (the old one keeps signing for 24 h)",
        );
      }
      const { secret, view } = await rotateWebhookSecret(getStore(), account.id);
      if (view.previousUntil) console.error(`the previous secret keeps signing until ${view.previousUntil}`);
      return secret;
    }
    default:
      throw new UsageError(`unknown command: ${command}`);
  }
}

async function main(): Promise<number> {
  try {
    const argv = process.argv.slice(2);
    const needsStore = !argv.includes("--help") && !argv.includes("-h") && argv.length > 0;
    if (needsStore && getStore().kind === "memory") {
      console.error(
        `warning: no Redis configured (REDIS_URL or UPSTASH_REDIS_REST_URL); using an in-memory store that ` +
          `vanishes when this command exits and that a running server cannot see.`,
      );
    }
    process.stdout.write(`${await run(argv)}\n`);
    return 0;
  } catch (error) {
    if (
      error instanceof UsageError ||
      (error instanceof TypeError && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS"))
    ) {
      console.error(`error: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    console.error(`error: ${isApiError(error) || error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    await resetStore().catch(() => undefined);
  }
}

// Read the configuration eagerly so a bad variable is reported as such (exit 1) before any command runs.
try {
  loadEnvFiles();
  getEnv();
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
process.exitCode = await main();
