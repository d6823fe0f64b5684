import { isIP } from "node:net";
import type { Env } from "@/lib/env";
import { formatIPv6, parseIPv6 } from "@/lib/input";

/**
 * The variable through which the server tells the app which request header carries the socket's address.
 * `scripts/serve.mjs` (what `npm start` and `npm run dev` run) picks a random header name at start, sets this
 * variable, deletes any header of that name a client sent, and sets it to `socket.remoteAddress` on every request.
 * Because the name is random per process, a client cannot forge it.
 */
const PEER_HEADER_VARIABLE = "OCR_PEER_ADDRESS_HEADER";

export interface ClientAddressOptions {
  /**
   * Proxies in front of the server that append to `X-Forwarded-For` and are trusted to (`TRUSTED_PROXY_HOPS`).
   * 0: the socket's address. N: the N-th `X-Forwarded-For` entry counted from the right.
   */
  trustedHops: number;
  /** Running on Vercel, whose edge overwrites the client-address headers (`VERCEL=1`). */
  onVercel: boolean;
  /** The header carrying the socket's address (see {@link PEER_HEADER_VARIABLE}); absent under `next start`/`next dev`. */
  peerHeader?: string;
}

/**
 * The one client address every per-address limit uses (sign-up, sign-in). Never the first `X-Forwarded-For` entry,
 * which the client writes:
 *
 * - on Vercel, the platform's own `x-real-ip` (Vercel overwrites it and `X-Forwarded-For` at its edge);
 * - elsewhere the chain is `X-Forwarded-For`'s entries followed by the socket's address, and the client is the entry
 *   `trustedHops` from its right end: with 0 hops the socket itself, with one proxy in front the address that proxy
 *   saw, and so on. A chain shorter than that gives its leftmost entry.
 *
 * Without the socket header (a server started by `next start` or `next dev` directly) the chain is only
 * `X-Forwarded-For`, where Next.js put the socket's address if the client sent none: a client can then choose its
 * address by sending the header, which docs/security.md tells self-hosters to avoid by using `npm start`.
 *
 * Returns a normalized IP address (IPv4-mapped IPv6 as IPv4), or undefined when none is known.
 */
export function clientAddress(headers: Headers, options: ClientAddressOptions): string | undefined {
  if (options.onVercel) {
    return (
      normalizeAddress(headers.get("x-real-ip")) ??
      normalizeAddress(headers.get("x-vercel-forwarded-for")?.split(",")[0]) ??
      normalizeAddress(headers.get("x-forwarded-for")?.split(",")[0])
    );
  }
  const chain = (headers.get("x-forwarded-for") ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean);
  const peer = options.peerHeader ? headers.get(options.peerHeader) : null;
  if (peer) chain.push(peer);
  if (chain.length === 0) return undefined;
  return normalizeAddress(chain[Math.max(0, chain.length - 1 - options.trustedHops)]);
}

/**
 * The options of this process: `TRUSTED_PROXY_HOPS` (configuration, `env`), and two facts of the platform: `VERCEL`
 * (set by Vercel, parsed into `env.onVercel`) and the socket header `scripts/serve.mjs` set up.
 */
export function clientAddressOptions(env: Pick<Env, "TRUSTED_PROXY_HOPS" | "onVercel">): ClientAddressOptions {
  return {
    trustedHops: env.TRUSTED_PROXY_HOPS,
    onVercel: env.onVercel,
    peerHeader: process.env[PEER_HEADER_VARIABLE] || undefined,
  };
}

/**
 * An address as it appears in headers (`1.2.3.4`, `1.2.3.4:5678`, `[2001:db8::1]:443`, `::ffff:1.2.3.4`) as a plain
 * IP address; undefined for anything that is not one.
 */
export function normalizeAddress(value: string | null | undefined): string | undefined {
  let address = value?.trim();
  if (!address) return undefined;
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (bracketed) address = bracketed[1]!;
  else if (/^[\d.]+:\d+$/.test(address)) address = address.slice(0, address.lastIndexOf(":"));
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) address = mapped[1]!;
  const version = isIP(address);
  if (version === 0) return undefined;
  return version === 6 ? address.toLowerCase() : address;
}

/** The upper 64 bits of an IPv6 address: its network. */
const IPV6_NETWORK_MASK = ((1n << 64n) - 1n) << 64n;

/**
 * The key a per-address limit counts under: an IPv4 address itself, an IPv6 address's /64 network in RFC 5952 form
 * (`2001:db8:1:2::/64`; one subscriber usually holds a whole /64, so counting single IPv6 addresses would let one
 * machine rotate through billions). The IPv6 text is read by lib/input's parser, the one the SSRF guard uses.
 */
export function addressLimitKey(address: string | undefined): string {
  if (!address) return "unknown";
  const value = isIP(address) === 6 ? parseIPv6(address) : undefined;
  if (value === undefined) return address;
  return `${formatIPv6(value & IPV6_NETWORK_MASK)}/64`;
}
