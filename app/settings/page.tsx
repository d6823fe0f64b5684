import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { signOutAction } from "@/app/actions/auth";
import { getCurrentAccount } from "@/lib/accounts/current";
import { getBalance, getDailyUsage, listLedger, TEST_CREDITS, testCreditsAvailable } from "@/lib/credits";
import { listJobViews } from "@/lib/jobs";
import { listApiKeys } from "@/lib/keys";
import { listConnectedApps } from "@/lib/oauth";
import { services } from "@/lib/services";
import { getWebhookAccount, listWebhookAttempts, listWebhookReceivers } from "@/lib/webhooks";
import { ConnectedAppsSection } from "./connected-apps-section";
import { CreditsSection } from "./credits-section";
import { JobsSection } from "./jobs-section";
import { KeysSection } from "./keys-section";
import { LedgerSection } from "./ledger-section";
import { KEY_ID } from "./ledger-query";
import { WebhooksSection } from "./webhooks-section";

export const metadata: Metadata = { title: "Settings" };

const LEDGER_PAGE = 20;
/** The most recent jobs listed (older ones: `ocr jobs list`, `GET /api/ocr/jobs`). */
const JOBS_SHOWN = 10;
/** Revoked keys listed (most recently revoked first); older ones still name their ledger rows. */
const REVOKED_SHOWN = 20;

type SearchParams = Promise<{ before?: string | string[]; key?: string | string[] }>;

export default async function SettingsPage({ searchParams }: { searchParams: SearchParams }) {
  const account = await getCurrentAccount();
  if (!account) redirect("/signin");
  const params = await searchParams;
  const cursor = typeof params.before === "string" && /^\d+$/.test(params.before) ? params.before : null;
  const requestedKey = typeof params.key === "string" && KEY_ID.test(params.key) ? params.key : null;

  const store = services().store;
  // The keys first: the ledger filter only takes one of this account's keys (revoked ones included).
  const keys = await listApiKeys(store, account.id);
  const keyFilter = keys.find((key) => key.id === requestedKey) ?? null;
  const [balance, ledger, usage, jobs, webhooks, deliveries, receivers, apps] = await Promise.all([
    getBalance(store, account.id),
    listLedger(store, account.id, { limit: LEDGER_PAGE, cursor, keyId: keyFilter?.id }),
    getDailyUsage(store, account.id, { days: 30 }),
    listJobViews(store, account.id, { limit: JOBS_SHOWN }),
    getWebhookAccount(store, account.id),
    listWebhookAttempts(store, account.id),
    listWebhookReceivers(store, account.id),
    listConnectedApps(services().store, account.id),
  ]);
  const keysById = new Map(keys.map((key) => [key.id, key]));
  const active = keys.filter((key) => key.revokedAt === null);
  const revoked = keys.filter((key) => key.revokedAt !== null);
  // What the table and the filter offer: every active key, the most recently revoked ones, and the filtered key.
  const listed = [...active, ...revoked.slice(0, REVOKED_SHOWN)];
  if (keyFilter && !listed.includes(keyFilter)) listed.push(keyFilter);
  const unlisted = keys.length - listed.length;

  return (
    <div className="settings stack-lg">
      <header className="settings-header">
        <div className="settings-who">
          <h1>Settings</h1>
          <p className="muted">
            Signed in as <strong className="account-email">{account.email}</strong>
          </p>
        </div>
        <form action={signOutAction}>
          <button type="submit" className="secondary">
            Sign out
          </button>
        </form>
      </header>

      <CreditsSection
        balance={balance}
        usage={usage}
        testCredits={testCreditsAvailable(store) ? TEST_CREDITS : undefined}
      />
      <KeysSection listed={listed} activeCount={active.length} unlisted={unlisted} />
      <ConnectedAppsSection apps={apps} />
      <JobsSection jobs={jobs.jobs} more={jobs.nextCursor !== null} />
      <WebhooksSection account={webhooks} attempts={deliveries} receivers={receivers} />
      <LedgerSection
        ledger={ledger}
        cursor={cursor}
        keys={listed}
        keysById={keysById}
        appNames={new Map(apps.map((app) => [app.id, app.name]))}
        keyFilter={keyFilter}
      />
    </div>
  );
}
