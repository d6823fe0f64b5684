/**
 * Which waiting job goes to which engine process (pool.ts's dispatch): the processes each tenant holds in a lane, the
 * tenant that may take one process beyond the inspect lane's size (docs/decisions.md#lane-fair-share), the idle
 * process a job goes to (one that holds its document already), and the documents a process keeps open — the job as
 * sent to a process carries a document's bytes only the first time, and a process keeps at most two documents. Also
 * what the lane's processes are running, as the expected wait (estimates.ts) and the pool's statistics read it.
 */
import type { EngineJob } from "../model/protocol";
import type { EngineProcess, Lane, QueuedJob } from "./engine-process";
import type { RunningJob } from "./estimates";
import type { PoolStats } from "./pool-options";

/** Documents the server keeps open in one process (the process itself allows a few more). */
const MAX_DOCS_PER_PROCESS = 2;

/** Processes of `lane` running a job, per tenant. */
export function holdings(processes: readonly EngineProcess[], lane: Lane): Map<string, number> {
  const held = new Map<string, number>();
  for (const process of processes) {
    const tenant = process.lane === lane && !process.retired ? process.current?.tenant : undefined;
    if (tenant !== undefined) held.set(tenant, (held.get(tenant) ?? 0) + 1);
  }
  return held;
}

/**
 * A tenant whose request waits in the inspect lane holding no process of it while another tenant holds two or more:
 * it may have one process beyond the lane's size. Inspect jobs may run for their whole processor budget (a PDF
 * that draws without end: 10 s), so one account's two such PDFs would otherwise hold everyone else's PDFs that long;
 * an OCR job is one page, and a waiting tenant gets the next process that frees.
 */
export function overflowTenant(
  lane: Lane,
  holdings: Map<string, number>,
  waitingTenants: Iterable<string>,
): string | undefined {
  if (lane !== "inspect") return undefined;
  let most = 0;
  for (const held of holdings.values()) most = Math.max(most, held);
  if (most < 2) return undefined;
  for (const tenant of waitingTenants) if (!holdings.get(tenant)) return tenant;
  return undefined;
}

/** The idle process `entry` goes to: one that holds the job's document already takes it (it is not sent again). */
export function pickProcess(idle: EngineProcess[], entry: QueuedJob): EngineProcess {
  const docId = "doc" in entry.job ? entry.job.doc.id : undefined;
  return idle.find((p) => docId !== undefined && p.docs.includes(docId)) ?? idle[0]!;
}

/**
 * The job as `process` is sent it: a document it holds goes by its id alone; a new one with its bytes, after the
 * process is told to drop its oldest documents past `MAX_DOCS_PER_PROCESS`.
 */
export function jobForProcess(process: EngineProcess, job: EngineJob): EngineJob {
  if (!("doc" in job)) return job;
  const { id, bytes } = job.doc;
  if (process.docs.includes(id)) return { ...job, doc: { id } };
  while (process.docs.length >= MAX_DOCS_PER_PROCESS) {
    const dropped = process.docs.shift()!;
    process.docBytes.delete(dropped);
    process.send({ type: "drop", docId: dropped });
  }
  process.docs.push(id);
  process.docBytes.set(id, bytes?.byteLength ?? 0);
  return { ...job, doc: { id, bytes } };
}

/** Close a document in every process that holds it. */
export function dropDocument(processes: readonly EngineProcess[], docId: string): void {
  for (const process of processes) {
    const index = process.docs.indexOf(docId);
    if (index < 0) continue;
    process.docs.splice(index, 1);
    process.docBytes.delete(docId);
    process.send({ type: "drop", docId });
  }
}

/** The jobs running in `lane`'s processes, for the expected wait (estimates.ts `expectedWaitMs`). */
export function runningJobs(processes: readonly EngineProcess[], lane: Lane, now: number): RunningJob[] {
  const running: RunningJob[] = [];
  for (const process of processes) {
    const entry = process.current;
    if (process.lane !== lane || !entry?.startedAt) continue;
    running.push({
      estimateMs: entry.estimateMs,
      elapsedMs: now - entry.startedAt,
      ...(entry.cpuBudgetMs !== undefined && { cpuBudgetMs: entry.cpuBudgetMs }),
    });
  }
  return running;
}

/** The live processes, as `PoolStats.processes` lists them. */
export function processList(processes: readonly EngineProcess[]): PoolStats["processes"] {
  return processes
    .filter((process) => !process.retired && process.pid !== undefined)
    .map((process) => ({
      pid: process.pid!,
      lane: process.lane,
      busy: process.busy,
      jobs: process.jobs,
      rssMb: process.rssMb,
    }));
}
