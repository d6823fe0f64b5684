/**
 * What the memory adapters share. Every memory adapter method finishes its changes before its first `await`, so
 * each one is atomic like its Lua counterpart; everything is lost when the process exits.
 */

interface Expiring<T> {
  value: T;
  /** Epoch ms; Infinity for no expiry. */
  expiresAt: number;
}

/** A map whose entries vanish after their TTL (checked when read, swept when written), like Redis keys. */
export class ExpiringMap<T> {
  private readonly entries = new Map<string, Expiring<T>>();
  private writes = 0;

  get(key: string): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: T, ttlMs?: number): void {
    this.entries.set(key, { value, expiresAt: ttlMs === undefined ? Infinity : Date.now() + ttlMs });
    if (++this.writes % 1_000 === 0) this.sweep();
  }

  /** Milliseconds until `key` expires (Infinity: never), or undefined when it is absent. */
  remainingMs(key: string): number | undefined {
    const entry = this.entries.get(key);
    if (!entry || entry.expiresAt <= Date.now()) return undefined;
    return entry.expiresAt - Date.now();
  }

  expire(key: string, ttlMs: number): void {
    const entry = this.entries.get(key);
    if (entry) entry.expiresAt = Date.now() + ttlMs;
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
  }
}
