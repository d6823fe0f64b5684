import type { Env } from "@/lib/env";
import { parseHostLiteral, parseIPv4, parseIPv6 } from "./address";

/**
 * `URL_ALLOW_HOSTS`: the private hosts a self-hoster lets `imageUrl` reach (an internal MinIO, `127.0.0.1:9000`),
 * past the SSRF guard that otherwise refuses every non-public address. Empty by default. Entries, comma-separated:
 *
 * - a host name, optionally with a port: `minio.internal`, `files.corp.example:9000` — every address it resolves to is
 *   accepted (the operator vouches for the name);
 * - an IP address, optionally with a port: `127.0.0.1:9000`, `[fd00::5]:8080`, `10.1.2.3`;
 * - a CIDR range: `10.20.0.0/16`, `fd00::/8` — any port.
 *
 * An entry with a port allows that port only (a URL without one uses its scheme's, 80 or 443). Everything not listed
 * stays refused: other private addresses, other ports, non-http(s) schemes, credentials in URLs.
 */
export interface AllowList {
  names: Array<{ name: string; port?: number }>;
  addresses: Array<{ address: string; port?: number }>;
  ranges: Array<{ family: 4 | 6; base: bigint; mask: bigint }>;
}

let configured: { value: string | undefined; list: AllowList } | undefined;

/**
 * The configuration's `URL_ALLOW_HOSTS`, parsed (again only when the variable changed). Throws an Error naming the
 * first bad entry: lib/startup.ts calls it before serving, so a malformed value stops the server at start.
 */
export function configuredAllowList(env: Pick<Env, "URL_ALLOW_HOSTS">): AllowList {
  const value = env.URL_ALLOW_HOSTS;
  if (!configured || configured.value !== value) configured = { value, list: parseAllowList(value) };
  return configured.list;
}

/** Parse the variable; throws an Error naming the first entry that is none of the three forms. */
export function parseAllowList(value: string | undefined): AllowList {
  const list: AllowList = { names: [], addresses: [], ranges: [] };
  for (const raw of (value ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean)) {
    const entry = raw.toLowerCase();
    const cidr = /^([^/]+)\/(\d{1,3})$/.exec(entry);
    if (cidr) {
      const literal = parseHostLiteral(cidr[1]!);
      const bits = Number(cidr[2]);
      const width = literal?.family === 6 ? 128 : 32;
      if (!literal || bits > width) throw new Error(`URL_ALLOW_HOSTS: "${raw}" is not a CIDR range`);
      const value = toBigInt(literal.address, literal.family);
      const mask = bits === 0 ? 0n : (((1n << BigInt(width)) - 1n) >> BigInt(width - bits)) << BigInt(width - bits);
      list.ranges.push({ family: literal.family, base: value & mask, mask });
      continue;
    }
    const { host, port } = splitPort(entry, raw);
    const literal = parseHostLiteral(host);
    if (literal) {
      list.addresses.push({ address: literal.address, ...(port !== undefined && { port }) });
    } else if (/^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/.test(host)) {
      list.names.push({ name: host.replace(/\.$/, ""), ...(port !== undefined && { port }) });
    } else {
      throw new Error(`URL_ALLOW_HOSTS: "${raw}" is not a host name, an address or a CIDR range`);
    }
  }
  return list;
}

/** Whether the list names `hostname` (a name, not an address) for `port`. */
export function allowsName(list: AllowList, hostname: string, port: number): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  return list.names.some((entry) => entry.name === name && (entry.port === undefined || entry.port === port));
}

/** Whether the list lets a connection to `address` (canonical form, as `parseHostLiteral` gives) on `port` through. */
export function allowsAddress(list: AllowList, address: { address: string; family: 4 | 6 }, port: number): boolean {
  if (
    list.addresses.some(
      (entry) => entry.address === address.address && (entry.port === undefined || entry.port === port),
    )
  )
    return true;
  const value = toBigInt(address.address, address.family);
  return list.ranges.some((range) => range.family === address.family && (value & range.mask) === range.base);
}

/** The port a URL connects to: its own, else its scheme's. */
export function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
}

function splitPort(entry: string, raw: string): { host: string; port?: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed)
    return { host: bracketed[1]!, ...(bracketed[2] !== undefined && { port: checkPort(bracketed[2], raw) }) };
  const withPort = /^([^:]+):(\d+)$/.exec(entry);
  if (withPort) return { host: withPort[1]!, port: checkPort(withPort[2]!, raw) };
  return { host: entry };
}

function checkPort(text: string, raw: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(`URL_ALLOW_HOSTS: "${raw}" has an invalid port`);
  return port;
}

function toBigInt(address: string, family: 4 | 6): bigint {
  return family === 4 ? BigInt(parseIPv4(address)!) : parseIPv6(address)!;
}
