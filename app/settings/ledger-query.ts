/** A key id as lib/keys makes them (`key_` + base64url); anything else in `?key=` is ignored. */
export const KEY_ID = /^key_[A-Za-z0-9_-]{1,64}$/;

/** `/settings` with the ledger's filter and page: `?key=key_…&before=120`. */
export function ledgerHref({ key, before }: { key?: string | null; before?: string | null }): string {
  const query = new URLSearchParams();
  if (key) query.set("key", key);
  if (before) query.set("before", before);
  const search = query.toString();
  return search ? `/settings?${search}` : "/settings";
}
