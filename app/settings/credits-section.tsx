import type { DailyUsage } from "@/lib/credits";
import { UsageChart } from "./usage-chart";

/** The balance and the last 30 days' usage. */
export function CreditsSection({ balance, usage }: { balance: number; usage: DailyUsage[] }) {
  return (
    <section aria-labelledby="credits-heading" className="card stack">
      <h2 id="credits-heading">Credits</h2>
      <p className="balance">
        <span className="balance-value" data-testid="balance">
          {balance}
        </span>{" "}
        credits left <span className="muted">· one credit per page read</span>
      </p>
      <UsageChart usage={usage} />
    </section>
  );
}
