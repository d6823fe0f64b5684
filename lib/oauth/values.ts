import { createHash, randomBytes } from "node:crypto";

/*
 * The secrets the authorization server hands out. Each is 32 random bytes, base64url, behind a prefix that says what
 * it is (so a Bearer value is routed to the right lookup at once, and a leaked one is recognisable in a scan); only
 * its SHA-256 is stored.
 */

export const ACCESS_TOKEN_PREFIX = "oat_";
export const REFRESH_TOKEN_PREFIX = "ort_";
export const CODE_PREFIX = "oac_";
export const CLIENT_ID_PREFIX = "ocl_";

const VALUE = /^[A-Za-z0-9_-]{43}$/;

export function newSecret(prefix: string): string {
  return prefix + randomBytes(32).toString("base64url");
}

export function hashSecret(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

/** Whether `value` has the shape of one of our secrets with `prefix` (checked before any store round trip). */
export function isSecret(value: string, prefix: string): boolean {
  return value.startsWith(prefix) && VALUE.test(value.slice(prefix.length));
}

export function newGrantId(): string {
  return `grt_${randomBytes(12).toString("base64url")}`;
}

export function newClientId(): string {
  return CLIENT_ID_PREFIX + randomBytes(16).toString("base64url");
}
