import { monitorEventLoopDelay, type ELDHistogram } from "node:perf_hooks";

/**
 * How late this process's event loop runs, from `perf_hooks.monitorEventLoopDelay`, over rolling windows: the
 * server must stay responsive while engine processes read documents (health checks, Redis replies and the next
 * request all wait for the loop). `/api/health` and the load bench report it.
 */
export interface EventLoopDelay {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Length of the window the figures are from (the last complete one; the current one until one completes). */
  windowMs: number;
}

const WINDOW_MS = 10_000;
const RESOLUTION_MS = 10;

interface Monitor {
  histogram: ELDHistogram;
  windowStarted: number;
  last?: EventLoopDelay;
  timer: NodeJS.Timeout;
}

const MONITOR_KEY = Symbol.for("ocr-service.event-loop-monitor");
type MonitorHolder = { [MONITOR_KEY]?: Monitor };

/** Start measuring (idempotent; one monitor per process whatever bundles load this module). */
export function startEventLoopMonitor(): void {
  monitor();
}

/** The event-loop delay of the last complete 10-second window (or of the current one, early on). */
export function eventLoopDelay(): EventLoopDelay {
  const current = monitor();
  return current.last ?? snapshot(current.histogram, Date.now() - current.windowStarted);
}

function monitor(): Monitor {
  const holder = globalThis as MonitorHolder;
  if (!holder[MONITOR_KEY]) {
    const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    histogram.enable();
    const current: Monitor = {
      histogram,
      windowStarted: Date.now(),
      timer: setInterval(() => {
        const now = Date.now();
        current.last = snapshot(histogram, now - current.windowStarted);
        histogram.reset();
        current.windowStarted = now;
      }, WINDOW_MS),
    };
    current.timer.unref();
    holder[MONITOR_KEY] = current;
  }
  return holder[MONITOR_KEY];
}

function snapshot(histogram: ELDHistogram, windowMs: number): EventLoopDelay {
  // The histogram is in nanoseconds and includes the sampling interval itself; report the delay beyond it.
  const ms = (ns: number) => Math.max(0, Math.round((ns / 1e6 - RESOLUTION_MS) * 10) / 10);
  if (histogram.count === 0) return { p50Ms: 0, p99Ms: 0, maxMs: 0, windowMs };
  return {
    p50Ms: ms(histogram.percentile(50)),
    p99Ms: ms(histogram.percentile(99)),
    maxMs: ms(histogram.max),
    windowMs,
  };
}
