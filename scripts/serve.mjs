// The HTTP server of a self-hosted instance: `npm start` (production, after `npm run build`) and `npm run dev`
// (through scripts/dev.mjs) run Next.js inside this server instead of `next start` / `next dev`, for two things
// Next's own server does not do (Vercel does both at its edge; see docs/security.md):
//
// - The socket's address reaches the app. Next.js only fills `X-Forwarded-For` when the client sent none, so behind
//   no proxy a client could name any address it likes. Here a random header name is chosen at start and published
//   in OCR_PEER_ADDRESS_HEADER; any header of that name a client sends is removed and the socket's address put in
//   its place. lib/client-ip.ts builds the one trusted client address from it and TRUSTED_PROXY_HOPS.
// - Slow clients are cut off: headers must arrive within SERVER_HEADERS_TIMEOUT_MS (10 s) and the whole request
//   within SERVER_REQUEST_TIMEOUT_MS (30 s; bodies are at most ~4.5 MB), checked every second (Node's default is
//   60 s and 300 s, checked every 30 s: 40 slow-loris connections stayed open for minutes).
//
//   node scripts/serve.mjs [--dev] [--port 3000] [--hostname 0.0.0.0]      (PORT and HOSTNAME work too)
import { randomBytes } from "node:crypto";
import http from "node:http";
import path from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    dev: { type: "boolean", default: false },
    port: { type: "string", short: "p" },
    hostname: { type: "string", short: "H" },
  },
});

const root = path.resolve(import.meta.dirname, "..");
const dev = values.dev;
const port = Number(values.port ?? process.env.PORT ?? 3000);
const hostname = values.hostname ?? process.env.HOSTNAME ?? (dev ? "localhost" : "0.0.0.0");

/** A whole number of milliseconds from the environment, or the default; exits on a bad value (like lib/env.ts). */
function milliseconds(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1000) {
    console.error(`Invalid configuration: ${name} must be a whole number of milliseconds ≥ 1000 (got ${JSON.stringify(raw)})`);
    process.exit(1);
  }
  return value;
}
const headersTimeout = milliseconds("SERVER_HEADERS_TIMEOUT_MS", 10_000);
const requestTimeout = Math.max(headersTimeout, milliseconds("SERVER_REQUEST_TIMEOUT_MS", 30_000));

// Set before Next.js (and the app with it) loads, so every module sees one mode and one header name.
process.env.NODE_ENV = dev ? "development" : "production";
const PEER_PREFIX = "x-ocr-peer-";
const peerHeader = `${PEER_PREFIX}${randomBytes(12).toString("hex")}`;
process.env.OCR_PEER_ADDRESS_HEADER = peerHeader;

const { default: next } = await import("next");
const app = next({ dev, dir: root, hostname, port, ...(dev && { turbopack: true }) });
const handle = app.getRequestHandler();
await app.prepare();

const server = http.createServer(
  { headersTimeout, requestTimeout, connectionsCheckingInterval: 1_000, keepAliveTimeout: 5_000 },
  (req, res) => {
    for (const name of Object.keys(req.headers)) if (name.startsWith(PEER_PREFIX)) delete req.headers[name];
    req.headers[peerHeader] = req.socket.remoteAddress ?? "";
    handle(req, res).catch((error) => {
      console.error("[serve] request failed:", error instanceof Error ? error.message : error);
      if (!res.headersSent) {
        res.statusCode = 500;
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ success: false, error: { code: "internal_error", message: "Internal server error" } }));
      } else res.destroy();
    });
  },
);
// Development: hot reloading talks over a WebSocket upgrade.
const upgrade = typeof app.getUpgradeHandler === "function" ? app.getUpgradeHandler() : undefined;
if (upgrade) server.on("upgrade", (req, socket, head) => void upgrade(req, socket, head).catch(() => socket.destroy()));

server.on("error", (error) => {
  console.error(`[serve] ${error.message}`);
  process.exit(1);
});
server.listen(port, hostname, () => {
  const shown = hostname === "0.0.0.0" || hostname === "::" ? "localhost" : hostname;
  console.info(`[serve] ${dev ? "development" : "production"} server on http://${shown}:${port}`);
});

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    server.close();
    server.closeAllConnections();
    void app.close?.();
    process.exit(0);
  });
}
