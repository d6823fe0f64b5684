/**
 * /proc readings for the load bench (Linux only): a process tree's CPU time, split into the main process's main
 * thread, its other threads and its descendant processes, and the tree's resident memory.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";

/** Clock ticks per second of the utime/stime fields. */
const CLK_TCK = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

interface ProcStat {
  pid: number;
  comm: string;
  ppid: number;
  /** utime + stime, in ticks. */
  own: number;
  /** cutime + cstime: waited-for children (and their reaped descendants), in ticks. */
  reaped: number;
}

function readStat(file: string): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return null; // gone
  }
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ")".
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  const fields = text.slice(close + 2).split(" ");
  const n = (i: number) => Number(fields[i]);
  return {
    pid: Number(text.slice(0, open).trim()),
    comm: text.slice(open + 1, close),
    ppid: n(1),
    own: n(11) + n(12),
    reaped: n(13) + n(14),
  };
}

/** Every live descendant of `pid` (children, grandchildren, …), from a scan of /proc. */
export function descendants(pid: number): ProcStat[] {
  const byParent = new Map<number, ProcStat[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(`/proc/${entry}/stat`);
    if (!stat) continue;
    const list = byParent.get(stat.ppid);
    if (list) list.push(stat);
    else byParent.set(stat.ppid, [stat]);
  }
  const found: ProcStat[] = [];
  const stack = [pid];
  while (stack.length > 0) {
    for (const child of byParent.get(stack.pop()!) ?? []) {
      found.push(child);
      stack.push(child.pid);
    }
  }
  return found;
}

export interface CpuSnapshot {
  at: number;
  /** The main process's main thread (task id = pid), ticks. */
  mainThread: number;
  /** The main process, all its threads (live and exited), ticks. */
  mainProcess: number;
  /** Descendant processes: the live ones' own + reaped time, plus the main process's reaped children, ticks. */
  descendants: number;
  descendantCount: number;
  /** Live threads of the main process other than the main thread: tid → [comm, ticks]. */
  threads: Map<number, [string, number]>;
}

export function cpuSnapshot(pid: number): CpuSnapshot | null {
  const main = readStat(`/proc/${pid}/stat`);
  const mainThread = readStat(`/proc/${pid}/task/${pid}/stat`);
  if (!main || !mainThread) return null;
  const threads = new Map<number, [string, number]>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    // gone
  }
  for (const tid of tids) {
    if (Number(tid) === pid) continue;
    const stat = readStat(`/proc/${pid}/task/${tid}/stat`);
    if (stat) threads.set(stat.pid, [stat.comm, stat.own]);
  }
  const children = descendants(pid);
  // A descendant that exits is reaped by its parent, whose cutime/cstime then carry its time: summing the
  // live descendants' own + reaped time and the main process's reaped time keeps every tick counted once.
  const descendantTicks = children.reduce((sum, child) => sum + child.own + child.reaped, 0) + main.reaped;
  return {
    at: performance.now(),
    mainThread: mainThread.own,
    mainProcess: main.own,
    descendants: descendantTicks,
    descendantCount: children.length,
    threads,
  };
}

export interface CpuSplit {
  wallSeconds: number;
  mainThreadSeconds: number;
  /** Threads of the main process other than the main thread (libuv pool, V8 platform, worker threads). */
  otherThreadsSeconds: number;
  descendantSeconds: number;
  totalSeconds: number;
  /** Other-thread time by thread name, for live threads only (threads that exited are in the total, not here). */
  threadsByName: Record<string, number>;
  maxDescendants: number;
}

export function cpuDelta(start: CpuSnapshot, end: CpuSnapshot): CpuSplit {
  const s = (ticks: number) => ticks / CLK_TCK;
  const mainThread = end.mainThread - start.mainThread;
  const mainProcess = end.mainProcess - start.mainProcess;
  const descendantTicks = end.descendants - start.descendants;
  const byName: Record<string, number> = {};
  for (const [tid, [comm, ticks]] of end.threads) {
    const before = start.threads.get(tid)?.[1] ?? 0;
    const name = comm.replace(/\d+$/, "#");
    byName[name] = (byName[name] ?? 0) + s(ticks - before);
  }
  return {
    wallSeconds: (end.at - start.at) / 1000,
    mainThreadSeconds: s(mainThread),
    otherThreadsSeconds: s(mainProcess - mainThread),
    descendantSeconds: s(descendantTicks),
    totalSeconds: s(mainProcess + descendantTicks),
    threadsByName: Object.fromEntries(
      Object.entries(byName)
        .sort((a, b) => b[1] - a[1])
        .filter(([, v]) => v > 0),
    ),
    maxDescendants: Math.max(start.descendantCount, end.descendantCount),
  };
}

export function sumCpu(splits: CpuSplit[]): CpuSplit {
  const byName: Record<string, number> = {};
  for (const split of splits)
    for (const [name, v] of Object.entries(split.threadsByName)) byName[name] = (byName[name] ?? 0) + v;
  const sum = (pick: (split: CpuSplit) => number) => splits.reduce((a, split) => a + pick(split), 0);
  return {
    wallSeconds: sum((x) => x.wallSeconds),
    mainThreadSeconds: sum((x) => x.mainThreadSeconds),
    otherThreadsSeconds: sum((x) => x.otherThreadsSeconds),
    descendantSeconds: sum((x) => x.descendantSeconds),
    totalSeconds: sum((x) => x.totalSeconds),
    threadsByName: Object.fromEntries(Object.entries(byName).sort((a, b) => b[1] - a[1])),
    maxDescendants: Math.max(0, ...splits.map((x) => x.maxDescendants)),
  };
}

/** Resident memory of `pid` and all its descendants (sum of VmRSS; shared pages count once per process). */
export function treeRssKiB(pid: number): { kib: number; processes: number } | null {
  const rss = (p: number) => {
    try {
      const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/status`, "utf8"));
      return match ? Number(match[1]) : 0;
    } catch {
      return null;
    }
  };
  const main = rss(pid);
  if (main === null) return null;
  const children = descendants(pid);
  return { kib: children.reduce((sum, child) => sum + (rss(child.pid) ?? 0), main), processes: 1 + children.length };
}

function cpuLine(): number[] {
  return readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
}

/** Busy CPU time of the whole machine (all cores; user, nice, system, irq, softirq), in seconds, from /proc/stat. */
export function machineBusySeconds(): number {
  const [user, nice, system, , , irq, softirq] = cpuLine();
  return (user! + nice! + system! + irq! + softirq!) / CLK_TCK;
}

/** Time the hypervisor ran something else while this VM wanted the CPU, in seconds (all cores). */
export function machineStealSeconds(): number {
  return (cpuLine()[7] ?? 0) / CLK_TCK;
}

/** CPU time of this process and its waited-for children (native tesseract runs), in seconds. */
export function selfCpuSeconds(): number {
  const stat = readStat("/proc/self/stat");
  return stat ? (stat.own + stat.reaped) / CLK_TCK : 0;
}

export function loadAverage(): [number, number, number] {
  const [a, b, c] = os.loadavg();
  return [Number(a!.toFixed(2)), Number(b!.toFixed(2)), Number(c!.toFixed(2))];
}

/** Samples the resident memory of `pid` and its descendants every `everyMs`; `stop()` returns the peak, MiB. */
export function sampleTreeRss(pid = process.pid, everyMs = 200): { stop: () => number } {
  const read = () => (treeRssKiB(pid)?.kib ?? 0) / 1024;
  let peak = read();
  const timer = setInterval(() => {
    peak = Math.max(peak, read());
  }, everyMs);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(peak, read());
    },
  };
}
