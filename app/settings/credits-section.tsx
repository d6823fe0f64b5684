import type { DailyUsage } from "@/lib/credits";
import { TestCreditsForm } from "./test-credits-form";
import { UsageChart } from "./usage-chart";

/** The balance and the last 30 days' usage; on a development server with the embedded store, test credits. */
export function CreditsSection({
  balance,
  usage,
  testCredits,
}: {
  balance: number;
  usage: DailyUsage[];
  testCredits?: number;
}) {
  return (
    <section aria-labelledby="credits-heading" className="card stack">
      <h2 id="credits-heading">Credits</h2>
      <p className="balance">
        <span className="balance-value" data-testid="balance">
          {balance}
        </span>{" "}
        credits left <span className="muted">· one credit per page read</span>
      </p>
      {testCredits !== undefined && <TestCreditsForm credits={testCredits} />}
      <UsageChart usage={usage} />
    </section>
  );
}
