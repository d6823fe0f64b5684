import { readdirSync, readFileSync } from "node:fs";

/**
 * Resident memory of a process and all its descendants, from /proc (Linux): the engine runs in child processes, so a
 * process's own peak RSS says little. `sampleTreeRss` returns a sampler that keeps the peak of the sum.
 */
export function treeRssMiB(root = process.pid): number {
  let total = 0;
  for (const pid of descendants(root)) total += rssKiB(pid);
  return total / 1024;
}

export function sampleTreeRss(root = process.pid, everyMs = 200): { peakMiB: () => number; stop: () => number } {
  let peak = treeRssMiB(root);
  const timer = setInterval(() => {
    peak = Math.max(peak, treeRssMiB(root));
  }, everyMs);
  timer.unref();
  return {
    peakMiB: () => Math.max(peak, treeRssMiB(root)),
    stop: () => {
      clearInterval(timer);
      return peak;
    },
  };
}

/** `root` and every process below it. */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const ppid = parentOf(Number(entry));
    if (ppid === null) continue;
    const list = children.get(ppid);
    if (list) list.push(Number(entry));
    else children.set(ppid, [Number(entry)]);
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    out.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return out;
}

function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // The command name (field 2) may contain spaces and parentheses: the fields after the last ")" are fixed.
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return null;
  }
}

function rssKiB(pid: number): number {
  try {
    return Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "latin1"))?.[1] ?? 0);
  } catch {
    return 0;
  }
}
