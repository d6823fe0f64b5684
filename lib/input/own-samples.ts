import { readFile } from "node:fs/promises";
import path from "node:path";

/**
 * The documents every deployment serves at `/samples/<name>` (public/samples/), which the examples of `/docs`, the
 * settings page and the README send as `imageUrl`. next.config.ts traces them into the OCR and MCP routes' build, so
 * a standalone server or a Vercel function has them beside its code.
 */
export const OWN_SAMPLES = ["scan.png", "scan.pdf", "report.pdf"] as const;

let warnedMissing = false;

/**
 * The bytes of this server's own sample when `imageUrl` names one: http(s), no credentials, the host this request came
 * to (`serverHost`, its `Host` header; the origin `/docs` prints), and a path that is exactly `/samples/` + one of
 * {@link OWN_SAMPLES} (a query or fragment is ignored, as the static file server ignores it). Undefined for every
 * other URL, which then goes through the SSRF-guarded fetch like any other.
 *
 * Why it is safe: nothing is fetched. The URL only picks one of three fixed files the server ships and serves to
 * anyone, so no address, port or path is reached through it, whatever `Host` a client claims. Without this a local
 * server refused its own samples (loopback is private to the SSRF guard), and the documented examples failed.
 * A sample missing from the build falls back to the guarded fetch (with one warning in the log).
 */
export async function readOwnSample(imageUrl: string, serverHost: string | undefined): Promise<Uint8Array | undefined> {
  const name = ownSampleName(imageUrl, serverHost);
  if (!name) return undefined;
  try {
    return new Uint8Array(await readFile(path.join(process.cwd(), "public", "samples", name)));
  } catch (error) {
    if (!warnedMissing) {
      warnedMissing = true;
      const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : "error";
      console.warn(
        `[samples] public/samples/${name} is not in this build (${code}): the URL is fetched instead (next.config.ts traces it)`,
      );
    }
    return undefined;
  }
}

/** The sample `imageUrl` names on `serverHost`, if it names one (see {@link readOwnSample}). */
export function ownSampleName(
  imageUrl: string,
  serverHost: string | undefined,
): (typeof OWN_SAMPLES)[number] | undefined {
  if (!serverHost) return undefined;
  let url: URL;
  let server: URL;
  try {
    url = new URL(imageUrl);
    // The Host header read the way the URL's host was, so `EXAMPLE.com:443` and `https://example.com` compare equal.
    server = new URL(`${url.protocol}//${serverHost}`);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  if (url.username || url.password || server.username || server.password) return undefined;
  if (server.pathname !== "/" || server.search || server.hash || url.host !== server.host) return undefined;
  return OWN_SAMPLES.find((name) => url.pathname === `/samples/${name}`);
}
