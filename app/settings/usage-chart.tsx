import type { DailyUsage } from "@/lib/credits";

const WIDTH = 300;
const HEIGHT = 80;
const GAP = 2;

/**
 * Pages per day over the last 30 days, as an inline SVG bar chart (no client JavaScript); a short message instead
 * when nothing was read in them (a new account), rather than an empty box.
 */
export function UsageChart({ usage }: { usage: DailyUsage[] }) {
  const max = Math.max(1, ...usage.map((day) => day.pages));
  const total = usage.reduce((sum, day) => sum + day.pages, 0);
  const barWidth = WIDTH / Math.max(1, usage.length);
  const first = usage[0]?.day;
  const last = usage.at(-1)?.day;
  if (total === 0) {
    return (
      <div className="chart-empty" data-testid="usage-empty">
        <p>
          <strong>No pages read in the last 30 days.</strong> Create a key below and run one of the snippets it shows:
          your pages per day will appear here.
        </p>
      </div>
    );
  }
  return (
    <figure className="chart">
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`Pages read per day, ${first} to ${last}: ${total} in total, at most ${max} in a day.`}
      >
        <line x1="0" y1={HEIGHT - 0.5} x2={WIDTH} y2={HEIGHT - 0.5} className="chart-axis" />
        {usage.map((day, index) => {
          const height = day.pages === 0 ? 0 : Math.max(2, (day.pages / max) * (HEIGHT - 4));
          return (
            <rect
              key={day.day}
              x={index * barWidth + GAP / 2}
              y={HEIGHT - height}
              width={Math.max(1, barWidth - GAP)}
              height={height}
              className="chart-bar"
            >
              <title>{`${day.day}: ${day.pages} page${day.pages === 1 ? "" : "s"}`}</title>
            </rect>
          );
        })}
      </svg>
      <figcaption className="chart-caption">
        <span>{first}</span>
        <span>
          {total} page{total === 1 ? "" : "s"} in 30 days
        </span>
        <span>{last}</span>
      </figcaption>
    </figure>
  );
}
