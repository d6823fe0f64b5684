/**
 * Waiting jobs per tenant, per session, each in the order first seen: served round-robin at both levels, so one
 * account's long or many documents do not hold up everyone behind them.
 */
export class FairQueue<T extends { tenant: string; session: string }> {
  private readonly tenants = new Map<string, Map<string, T[]>>();

  get isEmpty(): boolean {
    return this.tenants.size === 0;
  }

  get count(): number {
    let count = 0;
    for (const sessions of this.tenants.values()) for (const waiting of sessions.values()) count += waiting.length;
    return count;
  }

  *[Symbol.iterator](): Generator<T> {
    for (const sessions of this.tenants.values()) for (const waiting of sessions.values()) yield* waiting;
  }

  push(entry: T): void {
    let sessions = this.tenants.get(entry.tenant);
    if (!sessions) this.tenants.set(entry.tenant, (sessions = new Map()));
    const waiting = sessions.get(entry.session);
    if (waiting) waiting.push(entry);
    else sessions.set(entry.session, [entry]);
  }

  /** Tenants with waiting jobs, in the order they will be served. */
  waitingTenants(): IterableIterator<string> {
    return this.tenants.keys();
  }

  /**
   * The next job by round-robin: the first tenant's first session; both then go to the back of their lines. With
   * `holding` (how many processes each tenant holds already), the first of the tenants that hold the fewest: a
   * tenant holding a process does not get a second while one holding none waits (docs/decisions.md#lane-fair-share).
   */
  shift(holding?: (tenant: string) => number): T | undefined {
    let tenant: string | undefined;
    let fewest = Infinity;
    for (const candidate of this.tenants.keys()) {
      const held = holding ? holding(candidate) : 0;
      if (held < fewest) [tenant, fewest] = [candidate, held];
      if (fewest === 0) break;
    }
    if (tenant === undefined) return undefined;
    const sessions = this.tenants.get(tenant)!;
    const [session, waiting] = sessions.entries().next().value!;
    const entry = waiting.shift()!;
    sessions.delete(session);
    if (waiting.length > 0) sessions.set(session, waiting);
    this.tenants.delete(tenant);
    if (sessions.size > 0) this.tenants.set(tenant, sessions);
    return entry;
  }

  /** Take one waiting job out (its deadline passed). */
  remove(entry: T): void {
    const sessions = this.tenants.get(entry.tenant);
    const waiting = sessions?.get(entry.session);
    const index = waiting?.indexOf(entry) ?? -1;
    if (!sessions || !waiting || index < 0) return;
    waiting.splice(index, 1);
    if (waiting.length === 0) sessions.delete(entry.session);
    if (sessions.size === 0) this.tenants.delete(entry.tenant);
  }

  /** Take out every waiting job of a session. */
  takeSession(session: string): T[] {
    const taken: T[] = [];
    for (const [tenant, sessions] of this.tenants) {
      const waiting = sessions.get(session);
      if (!waiting) continue;
      sessions.delete(session);
      if (sessions.size === 0) this.tenants.delete(tenant);
      taken.push(...waiting);
    }
    return taken;
  }

  clear(): void {
    this.tenants.clear();
  }
}
