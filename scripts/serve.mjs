// The HTTP server of a self-hosted instance: `npm start` (production, after `npm run build`) and `npm run dev`
// (through scripts/dev.mjs) run Next.js inside this server instead of `next start` / `next dev`, for two things
// Next's own server does not do (Vercel does both at its edge; see docs/security.md):
//
// - The socket's address reaches the app. Next.js only fills `X-Forwarded-For` when the client sent none, so behind
//   no proxy a client could name any address it likes. Here a random header name is chosen at start and published
//   in OCR_PEER_ADDRESS_HEADER; any header of that name a client sends is removed and the socket's address put in
//   its place. lib/client-ip.ts builds the one trusted client address from it and TRUSTED_PROXY_HOPS.
// - Slow clients are cut off: headers must arrive within 10 s and the whole request within 30 s (bodies are at most
//   ~4.5 MB), checked every second (Node's default is
//   60 s and 300 s, checked every 30 s: 40 slow-loris connections stayed open for minutes).
// - Methods no path serves (TRACE, PROPFIND, …) get `501 not_implemented` with the API's error body. Next.js turns
//   every request into a fetch `Request`, which refuses TRACE, TRACK and CONNECT with a TypeError: Next answered
//   500 with an HTML error page and logged the stack, on every path. Other unknown methods ended in 400 or a page.
//
//   node scripts/serve.mjs [--dev] [--port 3000] [--hostname 0.0.0.0]      (PORT and HOSTNAME work too)
//                          [--headers-timeout-ms 10000]                     (tests shorten it; no variable)
//                          [--settings '{"webhooks":{"retryBaseMs":500}}'] (overrides of the modules' constant
//                          settings, lib/settings `installProcessSettings`: tests pass short timings here, not in variables)
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    dev: { type: "boolean", default: false },
    port: { type: "string", short: "p" },
    hostname: { type: "string", short: "H" },
    "headers-timeout-ms": { type: "string" },
    settings: { type: "string" },
  },
});

const root = path.resolve(import.meta.dirname, "..");
const dev = values.dev;
const port = Number(values.port ?? process.env.PORT ?? 3000);
const hostname = values.hostname ?? process.env.HOSTNAME ?? (dev ? "localhost" : "0.0.0.0");
// Read by /api/mcp (lib/mcp/rebinding.ts, same process): bound to a loopback address only, it refuses foreign Host and
// Origin headers (DNS-rebinding protection).
globalThis[Symbol.for("ocr-service.listen-hostname")] = hostname;

// The app reads these through lib/settings `processSettings` (same process, same globalThis key), when lib/services.ts
// builds the process's services.
if (values.settings) {
  // The same check as lib/settings `parseSettingsArgument` (the worker's), written here in plain JS.
  const sections = ["jobs", "webhooks", "ocr", "fetch", "keys", "accounts"];
  const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
  let overrides;
  try {
    overrides = JSON.parse(values.settings);
  } catch {
    overrides = undefined;
  }
  const valid =
    isObject(overrides) &&
    Object.entries(overrides).every(
      ([section, entries]) =>
        sections.includes(section) &&
        isObject(entries) &&
        Object.values(entries).every((value) => ["number", "string", "boolean"].includes(typeof value)),
    );
  if (!valid) {
    console.error(
      `--settings is a JSON object of sections (${sections.join(", ")}) of plain values, e.g. '{"webhooks":{"retryBaseMs":500}}'`,
    );
    process.exit(1);
  }
  globalThis[Symbol.for("ocr-service.settings-overrides")] = overrides;
}

/** Headers must arrive within this, the whole request within `REQUEST_TIMEOUT_MS` (were SERVER_*_TIMEOUT_MS). */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
const headersTimeout = Number(values["headers-timeout-ms"] ?? HEADERS_TIMEOUT_MS);
if (!Number.isSafeInteger(headersTimeout) || headersTimeout < 1000) {
  console.error(`--headers-timeout-ms is a whole number of milliseconds ≥ 1000 (got ${values["headers-timeout-ms"]})`);
  process.exit(1);
}
const requestTimeout = Math.max(headersTimeout, REQUEST_TIMEOUT_MS);

/**
 * Development only: the key Next.js derives server action ids from (and encrypts their bound arguments with), kept in
 * the build directory's cache so that it is the same at every start of this checkout. Next.js keeps its own key there,
 * except when it believes it runs in Docker (/.dockerenv, present on our machines): then it makes a new one at every
 * start, every server action id changes, and the client code of the pages with forms (/signin, /settings) no longer
 * matches what Turbopack cached in the run before. A restart on a warm .next then recompiles those pages while it
 * serves them — the reloads of issue 20. See docs/decisions.md#dev-server-actions-key.
 */
function devServerActionsKey() {
  const file = path.join(root, process.env.NEXT_DIST_DIR || ".next", "cache", "dev-server-actions-key");
  try {
    const saved = readFileSync(file, "utf8").trim();
    if (Buffer.from(saved, "base64").length === 32) return saved;
  } catch {
    // none yet
  }
  const key = randomBytes(32).toString("base64");
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

// Set before Next.js (and the app with it) loads, so every module sees one mode and one header name.
process.env.NODE_ENV = dev ? "development" : "production";
if (dev) process.env.NEXT_SERVER_ACTIONS_ENCRYPTION_KEY ||= devServerActionsKey();
const PEER_PREFIX = "x-ocr-peer-";
const peerHeader = `${PEER_PREFIX}${randomBytes(12).toString("hex")}`;
process.env.OCR_PEER_ADDRESS_HEADER = peerHeader;

/** Methods some path serves; an API route that does not take one of them answers 405 with `Allow` itself. */
const SERVED_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
// The headers every response carries (lib/http/security-headers.ts: COMMON_SECURITY_HEADERS, API_CSP, HSTS) and the
// CORS headers of /api/* (lib/http/cors.ts). Copied, since this file runs without TypeScript;
// tests/browser/site.test.ts compares them with what Next.js sets on an ordinary answer.
const SECURITY_HEADERS = {
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "strict-origin-when-cross-origin",
  "Permissions-Policy":
    "accelerometer=(), autoplay=(), browsing-topics=(), camera=(), display-capture=(), geolocation=(), gyroscope=(), " +
    "magnetometer=(), microphone=(), midi=(), payment=(), usb=()",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
};
const CORS_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers":
    "mcp-session-id, x-request-id, ratelimit-limit, ratelimit-remaining, ratelimit-reset, retry-after, x-credits-remaining, " +
    "location, link, preference-applied",
};

/**
 * `501 not_implemented` (RFC 9110 §15.6.2: no resource here supports the method) with the error body of
 * docs/api.md#errors, `x-request-id` (the format of lib/http/request-id.ts) and the headers above. Written as raw
 * HTTP when `res` is a socket (CONNECT).
 */
function notImplemented(method, url, headers) {
  const requestId = `req_${randomBytes(16).toString("base64url")}`;
  const shown = method.slice(0, 20);
  const body = JSON.stringify({
    success: false,
    error: {
      code: "not_implemented",
      message: `${shown} is not implemented by this server: it serves ${SERVED_METHODS.slice(0, -1).join(", ")} and OPTIONS`,
    },
    requestId,
  });
  const https =
    String(headers["x-forwarded-proto"] ?? "")
      .split(",")[0]
      .trim()
      .toLowerCase() === "https";
  return {
    body,
    headers: {
      ...SECURITY_HEADERS,
      ...(https && { "Strict-Transport-Security": "max-age=31536000" }),
      ...(String(url ?? "").startsWith("/api/") && CORS_HEADERS),
      "Content-Type": "application/json",
      "Content-Length": String(Buffer.byteLength(body)),
      "Cache-Control": "no-store",
      "x-request-id": requestId,
    },
  };
}

const { default: next } = await import("next");
const app = next({ dev, dir: root, hostname, port, ...(dev && { turbopack: true }) });
const handle = app.getRequestHandler();
await app.prepare();

const server = http.createServer(
  { headersTimeout, requestTimeout, connectionsCheckingInterval: 1_000, keepAliveTimeout: 5_000 },
  (req, res) => {
    if (!SERVED_METHODS.includes(req.method ?? "")) {
      const answer = notImplemented(req.method ?? "", req.url, req.headers);
      res.writeHead(501, answer.headers).end(answer.body);
      return;
    }
    for (const name of Object.keys(req.headers)) if (name.startsWith(PEER_PREFIX)) delete req.headers[name];
    req.headers[peerHeader] = req.socket.remoteAddress ?? "";
    handle(req, res).catch((error) => {
      console.error("[serve] request failed:", error instanceof Error ? error.message : error);
      if (!res.headersSent) {
        res.statusCode = 500;
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({ success: false, error: { code: "internal_error", message: "Internal server error" } }),
        );
      } else res.destroy();
    });
  },
);
// Development: hot reloading talks over a WebSocket upgrade. Next.js hooks its upgrade handler onto the server of the
// first request it handles (`app.getUpgradeHandler()` does nothing in Next 16.4), so until a page had been asked for,
// the hot-reload socket of a page left open across a restart got no answer at all. Hook it on now.
if (dev) app.setupWebSocketHandler?.(server);

// Without a listener Node closes a CONNECT's connection unanswered; say why, then close it (it is no tunnel).
server.on("connect", (req, socket) => {
  const answer = notImplemented(req.method ?? "CONNECT", req.url, req.headers);
  const head = Object.entries({ ...answer.headers, Connection: "close" })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  socket.on("error", () => undefined);
  socket.end(`HTTP/1.1 501 Not Implemented\r\n${head}\r\n${answer.body}`);
});

server.on("error", (error) => {
  console.error(`[serve] ${error.message}`);
  process.exit(1);
});
server.listen(port, hostname, () => {
  const shown = hostname === "0.0.0.0" || hostname === "::" ? "localhost" : hostname;
  console.info(`[serve] ${dev ? "development" : "production"} server on http://${shown}:${port}`);
});

function stop() {
  server.close();
  server.closeAllConnections();
  void app.close?.();
  process.exit(0);
}
for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, stop);
// Started by scripts/dev.mjs (`npm run dev`), which keeps an IPC channel to this process: when dev.mjs goes away without
// stopping us (`kill -9` of it), stop too. Left running, this server kept the port and the build directory's lock with
// no engine rebuilds behind it, and the next `npm run dev` was refused ("Another next dev server is already running").
if (process.channel) {
  process.channel.unref();
  process.once("disconnect", stop);
}
