import net from "node:net";

/** An IP address in canonical text form: dotted quad for IPv4, RFC 5952 for IPv6 (no zone, no brackets). */
export interface IpAddress {
  address: string;
  family: 4 | 6;
}

/**
 * IPv4 ranges that a fetch must never reach: IANA special-purpose blocks that are not globally reachable.
 * The SSRF guard's whole worth is in this table; every entry is tested on both edges.
 */
const DENIED_IPV4: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8], // "this network"; 0.0.0.0 reaches the local host on Linux
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, cloud metadata endpoints (169.254.169.254)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // TEST-NET-1
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // TEST-NET-2
  ["203.0.113.0", 24], // TEST-NET-3
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, includes the broadcast 255.255.255.255
];

/** IPv6 blocks inside global unicast (2000::/3) that are still not a place to fetch files from. */
const DENIED_IPV6: ReadonlyArray<readonly [string, number]> = [
  ["2001::", 23], // IETF protocol assignments: Teredo, benchmarking, ORCHID
  ["2001:db8::", 32], // documentation
  ["3fff::", 20], // documentation (RFC 9637)
];

const deniedV4 = DENIED_IPV4.map(([base, bits]) => ({ base: parseIPv4(base)!, mask: maskV4(bits) }));
const deniedV6 = DENIED_IPV6.map(([base, bits]) => ({ base: parseIPv6(base)!, mask: maskV6(bits) }));

const V6_GLOBAL_UNICAST = { base: 0x2n << 124n, mask: maskV6(3) }; // 2000::/3
const V6_MAPPED = { base: 0xffffn << 32n, mask: maskV6(96) }; // ::ffff:0:0/96
const V6_NAT64 = { base: 0x64ff9bn << 96n, mask: maskV6(96) }; // 64:ff9b::/96
const V6_6TO4 = { base: 0x2002n << 112n, mask: maskV6(16) }; // 2002::/16

function maskV4(bits: number): number {
  return bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
}

function maskV6(bits: number): bigint {
  const all = (1n << 128n) - 1n;
  return (all << BigInt(128 - bits)) & all;
}

function inV6(value: bigint, range: { base: bigint; mask: bigint }): boolean {
  return (value & range.mask) === range.base;
}

/** Strict dotted quad (`192.0.2.1`) as an unsigned 32-bit number; undefined for anything else. */
export function parseIPv4(text: string): number | undefined {
  if (!net.isIPv4(text)) return undefined;
  return text.split(".").reduce((value, part) => value * 256 + Number(part), 0);
}

/** Any valid IPv6 text (with or without a `%zone`, dotted tail allowed) as a 128-bit number. */
export function parseIPv6(text: string): bigint | undefined {
  const bare = text.split("%", 1)[0] ?? "";
  if (!net.isIPv6(bare)) return undefined;

  let groups = bare;
  const lastColon = groups.lastIndexOf(":");
  const tail = groups.slice(lastColon + 1);
  if (tail.includes(".")) {
    const v4 = parseIPv4(tail);
    if (v4 === undefined) return undefined;
    groups = `${groups.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }

  const [head = "", rest] = groups.split("::");
  const headParts = head ? head.split(":") : [];
  const restParts = rest ? rest.split(":") : [];
  const zeros = rest === undefined ? 0 : 8 - headParts.length - restParts.length;
  const parts = [...headParts, ...Array<string>(zeros).fill("0"), ...restParts];
  if (parts.length !== 8) return undefined;
  return parts.reduce((value, part) => (value << 16n) | BigInt(Number.parseInt(part, 16)), 0n);
}

function formatIPv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff].join(".");
}

/** RFC 5952 text: lowercase, no leading zeros, the longest run of two or more zero groups as `::`. */
export function formatIPv6(value: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn));
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

/**
 * One IPv4 part as the WHATWG URL host parser reads it: `0x`-prefixed hex, `0`-prefixed octal, else decimal.
 * https://url.spec.whatwg.org/#ipv4-number-parser
 */
function parseIPv4Number(part: string): number | undefined {
  if (/^0x[0-9a-f]*$/i.test(part)) return part.length === 2 ? 0 : Number.parseInt(part.slice(2), 16);
  if (/^0[0-7]+$/.test(part)) return Number.parseInt(part.slice(1), 8);
  if (/^(0|[1-9][0-9]*)$/.test(part)) return Number(part);
  return undefined;
}

/**
 * The IPv4 forms a URL host may carry and that resolvers (inet_aton) accept: `2130706433`, `0177.0.0.1`,
 * `0x7f.1`, `127.1`, a trailing dot. Undefined when the host is not an IPv4 literal.
 * https://url.spec.whatwg.org/#concept-ipv4-parser
 */
function parseIPv4Literal(host: string): number | undefined {
  const parts = host.split(".");
  if (parts.length > 1 && parts.at(-1) === "") parts.pop();
  if (parts.length === 0 || parts.length > 4) return undefined;
  const numbers: number[] = [];
  for (const part of parts) {
    const value = parseIPv4Number(part);
    if (value === undefined || !Number.isSafeInteger(value)) return undefined;
    numbers.push(value);
  }
  const last = numbers.pop()!;
  if (numbers.some((value) => value > 255) || last >= 256 ** (4 - numbers.length)) return undefined;
  return numbers.reduce((sum, value, i) => sum + value * 256 ** (3 - i), last);
}

/**
 * Recognizes a host that is an IP literal in any form a URL (or a lenient resolver) may carry: dotted quad,
 * decimal / octal / hex / short IPv4 (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`), percent-encoded
 * digits, and IPv6 with or without brackets, with a zone (`[fe80::1%25eth0]`) or a dotted tail
 * (`[::ffff:127.0.0.1]`). Returns the canonical address, or undefined when the host is a name.
 */
export function parseHostLiteral(host: string): IpAddress | undefined {
  let text = host.trim();
  try {
    text = decodeURIComponent(text);
  } catch {
    // not percent-encoded (e.g. an already decoded zone such as `fe80::1%eth0`): use as is
  }
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);

  if (text.includes(":")) {
    const v6 = parseIPv6(text);
    return v6 === undefined ? undefined : { address: formatIPv6(v6), family: 6 };
  }
  const v4 = parseIPv4Literal(text);
  return v4 === undefined ? undefined : { address: formatIPv4(v4), family: 4 };
}

function isPublicIPv4(value: number): boolean {
  return !deniedV4.some(({ base, mask }) => (value & mask) >>> 0 === base);
}

function isPublicIPv6(value: bigint): boolean {
  // Forms that carry an IPv4 address reach that address: judge the embedded one.
  if (inV6(value, V6_MAPPED) || inV6(value, V6_NAT64)) return isPublicIPv4(Number(value & 0xffffffffn));
  if (inV6(value, V6_6TO4)) return isPublicIPv4(Number((value >> 80n) & 0xffffffffn));
  // Outside global unicast lives everything else: ::, ::1, IPv4-compatible ::a.b.c.d, unique local
  // fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8, discard 100::/64, local NAT64.
  if (!inV6(value, V6_GLOBAL_UNICAST)) return false;
  return !deniedV6.some((range) => inV6(value, range));
}

/**
 * True only for an IP address a server-side fetch may connect to: not private, loopback, link-local, CGNAT,
 * multicast, unspecified, reserved or documentation space, and no IPv6 form embedding such an IPv4 address.
 * Accepts every form `parseHostLiteral` does. Anything that is not an IP address is false (fail closed).
 */
export function isPublicAddress(ip: string): boolean {
  const literal = parseHostLiteral(ip);
  if (!literal) return false;
  return literal.family === 4 ? isPublicIPv4(parseIPv4(literal.address)!) : isPublicIPv6(parseIPv6(literal.address)!);
}

/** Names that resolve to the local host by definition (RFC 6761), refused without asking DNS. */
export function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}
