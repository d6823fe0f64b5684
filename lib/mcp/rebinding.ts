/*
 * DNS-rebinding protection for a server only this machine can reach (the MCP spec's security warning for local
 * servers: https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#security-warning). A web page on
 * another site can make a browser resolve its own name to 127.0.0.1 and post to the local server under that name;
 * the `Host` (and the page's `Origin`) then name the other site. So while the server listens on a loopback address
 * only, `/api/mcp` answers only requests whose `Host` — and `Origin`, when there is one — name a loopback host
 * (`localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`). A server listening on every interface (`npm start`'s default,
 * 0.0.0.0) or on a public name serves whatever name it is reached by, as before: it is meant to be reached from
 * elsewhere and keys, not origins, authenticate.
 */

import { getEnv } from "@/lib/env";

/** Where scripts/serve.mjs records the address it listens on (the same process as the routes). */
export const LISTEN_HOST_KEY = Symbol.for("ocr-service.listen-hostname");

type ListenHolder = { [LISTEN_HOST_KEY]?: string };

/**
 * The address this server listens on: what scripts/serve.mjs recorded (`npm start`, `npm run dev`), else — the
 * standalone build's `server.js`, which listens on `HOSTNAME` — that variable. Not on Vercel, whose functions listen
 * behind the platform whatever `HOSTNAME` says.
 */
function listenHostname(): string | undefined {
  const recorded = (globalThis as ListenHolder)[LISTEN_HOST_KEY];
  if (recorded !== undefined) return recorded;
  const env = getEnv();
  return env.onVercel ? undefined : env.HOSTNAME;
}

/** Whether a host name (no port; IPv6 with or without brackets) is this machine's loopback. */
export function isLoopbackHostname(hostname: string): boolean {
  const name = hostname
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost") || name === "::1" || /^127(?:\.\d{1,3}){3}$/.test(name);
}

/** The hostname of a `Host` value (`name`, `name:port`, `[v6]:port`), or null when it is not one. */
function hostnameOf(host: string): string | null {
  try {
    return new URL(`http://${host.trim()}`).hostname;
  } catch {
    return null;
  }
}

/**
 * Why a request to a loopback-only server is refused (a foreign `Host` or `Origin`), or null when it is not: the
 * server listens elsewhere too (or nobody recorded where), or both name loopback hosts.
 */
export function rebindingRefusal(req: Request, listening = listenHostname()): string | null {
  if (listening === undefined || !isLoopbackHostname(listening)) return null;
  const host = hostnameOf(req.headers.get("host") ?? new URL(req.url).host);
  if (host === null || !isLoopbackHostname(host)) {
    return "This server listens on this machine only: /api/mcp answers requests to localhost or 127.0.0.1, not to another host name (DNS-rebinding protection)";
  }
  const origin = req.headers.get("origin");
  if (origin !== null) {
    let originHost: string | null = null;
    try {
      originHost = new URL(origin).hostname;
    } catch {
      originHost = null;
    }
    if (originHost === null || !isLoopbackHostname(originHost)) {
      return "This server listens on this machine only: /api/mcp answers pages served from localhost, not from another site (DNS-rebinding protection)";
    }
  }
  return null;
}
