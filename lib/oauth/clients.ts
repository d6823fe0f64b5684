import { z } from "zod";
import { isApiError } from "@/lib/api/errors";
import { fetchRemoteFile, type AllowList } from "@/lib/input";
import type { OAuthClientRecord, Store } from "@/lib/store";
import {
  CLIENT_METADATA_CACHE_MS,
  CLIENT_METADATA_FETCHES_PER_ADDRESS_PER_HOUR,
  CLIENT_METADATA_MAX_BYTES,
  CLIENT_METADATA_TIMEOUT_MS,
  MAX_CACHED_CLIENT_DOCUMENTS_PER_HOUR,
  REGISTRATIONS_PER_ADDRESS_PER_HOUR,
  UNUSED_REGISTRATION_TTL_MS,
} from "./config";
import { OAuthProblem } from "./problem";
import { newClientId } from "./values";

/**
 * Schemes a redirect may never use, whatever the client says: they run or read things in the browser, or hand the
 * address to an operating system's handler (`ms-msdt:`, `search-ms:`, `smb:` — issue 39). `ms-*` is refused as a
 * family below.
 */
const FORBIDDEN_SCHEMES = new Set([
  "javascript",
  "data",
  "file",
  "vbscript",
  "blob",
  "about",
  "ftp",
  "ws",
  "wss",
  "filesystem",
  "view-source",
  "search",
  "search-ms",
  "smb",
  "nfs",
  "afp",
  "webdav",
  "dav",
  "mailto",
  "tel",
  "sms",
  "intent",
  "jar",
  "res",
  "chrome",
  "edge",
  "shell",
  "hcp",
  "its",
  "mk",
  "jnlp",
  "steam",
]);

/**
 * The app schemes without a dot that MCP clients really register (`cursor://anysphere.cursor-mcp/oauth/callback`,
 * VS Code's and its forks' `vscode://…`); any other private-use scheme must be reverse-domain (`com.example.app:`,
 * RFC 8252 §7.1), which no operating system's own handler uses.
 */
const APP_SCHEMES = new Set(["cursor", "vscode", "vscode-insiders", "vscodium", "windsurf", "claude", "zed", "kiro"]);
export const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);

/**
 * Why `uri` cannot be a redirect URI, or null when it can: an absolute URL without a fragment, and https; or http to a
 * loopback address (native apps and CLIs, RFC 8252 §7.3); or an app's own scheme — reverse-domain (`com.example.app:`,
 * RFC 8252 §7.1) or one of the few MCP clients' (`cursor:`, `vscode:`). Never a scheme the browser or the operating
 * system runs something with (`javascript:`, `file:`, `ms-msdt:`, `search-ms:`, `smb:`…). It is later compared exactly
 * with the authorization request's `redirect_uri`.
 */
export function redirectUriProblem(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `"${uri.slice(0, 100)}" is not an absolute URL`;
  }
  if (url.hash !== "" || uri.includes("#")) return "a redirect URI may not have a fragment";
  const scheme = url.protocol.slice(0, -1);
  if (scheme === "https") return null;
  if (scheme === "http")
    return LOOPBACK_HOSTS.has(url.hostname)
      ? null
      : "http is allowed only to a loopback address (127.0.0.1, [::1], localhost)";
  if (FORBIDDEN_SCHEMES.has(scheme) || scheme.startsWith("ms-") || scheme.startsWith("ms."))
    return `the ${scheme}: scheme is not allowed`;
  if (APP_SCHEMES.has(scheme) || /^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+$/.test(scheme)) return null;
  return `the ${scheme}: scheme is not allowed: use https, http to a loopback address, or an app scheme in reverse-domain form (com.example.app:/callback)`;
}

const redirectUrisSchema = z
  .array(z.string().min(1).max(2048))
  .min(1, "redirect_uris needs at least one URI")
  .max(10, "at most 10 redirect_uris")
  .superRefine((uris, context) => {
    for (const uri of uris) {
      const problem = redirectUriProblem(uri);
      if (problem) context.addIssue({ code: "custom", message: problem });
    }
  });

/** What a client says about itself: a registration request (RFC 7591 §2) or a Client ID Metadata Document. */
const clientMetadataSchema = z.object({
  redirect_uris: redirectUrisSchema,
  client_name: z.string().trim().min(1).max(100).optional(),
  client_uri: z.url().max(2048).optional(),
  grant_types: z.array(z.string()).optional(),
  response_types: z.array(z.string()).optional(),
  token_endpoint_auth_method: z.string().optional(),
  scope: z.string().optional(),
});
type ClientMetadata = z.infer<typeof clientMetadataSchema>;

function checkGrantTypes(metadata: ClientMetadata): void {
  const unsupported = (metadata.grant_types ?? []).filter(
    (type) => type !== "authorization_code" && type !== "refresh_token",
  );
  if (unsupported.length > 0) {
    throw new OAuthProblem(
      "invalid_client_metadata",
      `Unsupported grant_types: ${unsupported.join(", ")} (this server issues authorization_code and refresh_token only)`,
    );
  }
  const responses = (metadata.response_types ?? []).filter((type) => type !== "code");
  if (responses.length > 0)
    throw new OAuthProblem(
      "invalid_client_metadata",
      `Unsupported response_types: ${responses.join(", ")} (only code)`,
    );
}

function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join(".") || "metadata"}: ${issue.message}`).join("; ");
}

/** The registration's answer (RFC 7591 §3.2.1): the client as registered. */
export interface RegisteredClient {
  client_id: string;
  client_id_issued_at: number;
  client_name: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: "none";
  client_uri?: string;
}

/**
 * Dynamic client registration (RFC 7591): every client is public (`token_endpoint_auth_method: "none"`, PKCE instead
 * of a secret). Limited per client address; a registration nobody authorizes within a day is forgotten.
 *
 * @throws OAuthProblem `invalid_client_metadata`, `invalid_redirect_uri`, or `429` past the limit
 */
export async function registerClient(store: Store, body: unknown, address: string): Promise<RegisteredClient> {
  const limit = await store.limits.rateLimit({
    bucket: "oauth-register",
    identifier: address,
    limit: REGISTRATIONS_PER_ADDRESS_PER_HOUR,
    windowMs: 3_600_000,
  });
  if (!limit.success) {
    const retryAfter = Math.max(1, Math.ceil((limit.reset - Date.now()) / 1000));
    throw new OAuthProblem(
      "rate_limited",
      `Too many client registrations from this address: at most ${limit.limit} an hour. Retry in ${retryAfter} s.`,
      {
        status: 429,
        headers: { "Retry-After": String(retryAfter) },
      },
    );
  }
  const parsed = clientMetadataSchema.safeParse(body);
  if (!parsed.success) {
    const redirect = parsed.error.issues.some((issue) => issue.path[0] === "redirect_uris");
    throw new OAuthProblem(redirect ? "invalid_redirect_uri" : "invalid_client_metadata", describeIssues(parsed.error));
  }
  const metadata = parsed.data;
  checkGrantTypes(metadata);
  const client: OAuthClientRecord = {
    clientId: newClientId(),
    kind: "registered",
    name: metadata.client_name ?? "Unnamed app",
    redirectUris: metadata.redirect_uris,
    clientUri: metadata.client_uri ?? null,
    createdAt: new Date().toISOString(),
  };
  await store.oauth.saveClient(client, UNUSED_REGISTRATION_TTL_MS);
  return {
    client_id: client.clientId,
    client_id_issued_at: Math.floor(Date.parse(client.createdAt) / 1000),
    client_name: client.name,
    redirect_uris: client.redirectUris,
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    ...(client.clientUri && { client_uri: client.clientUri }),
  };
}

/** Whether a `client_id` is a Client ID Metadata Document's URL (an https URL with a path) rather than a registration. */
export function isMetadataDocumentId(clientId: string): boolean {
  if (!clientId.startsWith("https://")) return false;
  try {
    return new URL(clientId).pathname.length > 1;
  } catch {
    return false;
  }
}

/**
 * Why an https `client_id` cannot name a Client ID Metadata Document, or null: it must be a plain document address —
 * a path, no query, fragment, credentials or dot segments (draft-ietf-oauth-client-id-metadata-document §3). A query
 * would make every request a new document (a reflector answers any of them).
 */
function metadataDocumentIdProblem(clientId: string): string | null {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return "it is not a URL";
  }
  if (url.pathname.length <= 1) return "it has no path";
  if (url.search !== "" || clientId.includes("?")) return "it has a query";
  if (url.hash !== "" || clientId.includes("#")) return "it has a fragment";
  if (url.username !== "" || url.password !== "") return "it has credentials";
  if (/\/\.{1,2}(\/|$)/.test(clientId.slice(url.origin.length))) return "it has . or .. segments";
  return null;
}

/**
 * The client behind `clientId`, or null when there is none: a registration from the store, or — for an https URL —
 * the Client ID Metadata Document at that URL, fetched through the `imageUrl` SSRF guard (public addresses only, or
 * `URL_ALLOW_HOSTS`: `allowHosts`, the configuration's, parsed by the caller with `configuredAllowList(env)`; no
 * redirects; 5 KB; 5 s) and kept for an hour. A fetch (not a cached document) counts against the client address
 * `address` (`addressLimitKey`): `CLIENT_METADATA_FETCHES_PER_ADDRESS_PER_HOUR`; at most
 * `MAX_CACHED_CLIENT_DOCUMENTS_PER_HOUR` documents are newly kept an hour, all clients together.
 *
 * @throws OAuthProblem `invalid_client` when the id is an http URL, or the document cannot be fetched or is not a valid
 * document for this id; `rate_limited` (429) past the address's lookups
 */
export async function findClient(
  store: Store,
  clientId: string,
  allowHosts: AllowList,
  address = "unknown",
): Promise<OAuthClientRecord | null> {
  if (clientId.length === 0 || clientId.length > 2048) return null;
  const known = await store.oauth.getClient(clientId);
  if (known) return known;
  if (/^http:\/\//i.test(clientId)) {
    throw new OAuthProblem(
      "invalid_client",
      `A client metadata document must be https: ${clientId.slice(0, 200)} is http (the app's client_id is wrong).`,
    );
  }
  if (!/^https:\/\//i.test(clientId)) return null;
  const problem = metadataDocumentIdProblem(clientId);
  if (problem)
    throw new OAuthProblem(
      "invalid_client",
      `${clientId.slice(0, 200)} cannot be a client metadata document: ${problem}`,
    );
  const limit = await store.limits.rateLimit({
    bucket: "oauth-client-lookup",
    identifier: address,
    limit: CLIENT_METADATA_FETCHES_PER_ADDRESS_PER_HOUR,
    windowMs: 3_600_000,
  });
  if (!limit.success) {
    const retryAfter = Math.max(1, Math.ceil((limit.reset - Date.now()) / 1000));
    throw new OAuthProblem(
      "rate_limited",
      `Too many app lookups from this address: at most ${limit.limit} client metadata documents an hour. Retry in ${retryAfter} s.`,
      { status: 429, headers: { "Retry-After": String(retryAfter) } },
    );
  }
  const client = await fetchClientMetadata(clientId, allowHosts);
  const room = await store.limits.rateLimit({
    bucket: "oauth-client-documents",
    identifier: "all",
    limit: MAX_CACHED_CLIENT_DOCUMENTS_PER_HOUR,
    windowMs: CLIENT_METADATA_CACHE_MS,
  });
  if (room.success) await store.oauth.saveClient(client, CLIENT_METADATA_CACHE_MS);
  return client;
}

async function fetchClientMetadata(clientId: string, allowHosts: AllowList): Promise<OAuthClientRecord> {
  let text: string;
  try {
    const file = await fetchRemoteFile(clientId, {
      maxBytes: CLIENT_METADATA_MAX_BYTES,
      allowHosts,
      timeoutMs: CLIENT_METADATA_TIMEOUT_MS,
      maxRedirects: 0,
    });
    text = new TextDecoder().decode(file.bytes);
  } catch (error) {
    const reason = isApiError(error)
      ? error.message.replace(/imageUrl/g, "the client metadata document")
      : "it could not be fetched";
    throw new OAuthProblem(
      "invalid_client",
      `The client's metadata document at ${clientId} was not accepted: ${reason}`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new OAuthProblem("invalid_client", `The client's metadata document at ${clientId} is not JSON`);
  }
  const parsed = clientMetadataSchema.extend({ client_id: z.string() }).safeParse(json);
  if (!parsed.success)
    throw new OAuthProblem(
      "invalid_client",
      `The client's metadata document at ${clientId} is invalid: ${describeIssues(parsed.error)}`,
    );
  const metadata = parsed.data;
  if (metadata.client_id !== clientId) {
    throw new OAuthProblem(
      "invalid_client",
      `The client's metadata document names another client_id (${metadata.client_id.slice(0, 200)}) than its URL`,
    );
  }
  if (metadata.token_endpoint_auth_method !== undefined && metadata.token_endpoint_auth_method !== "none") {
    throw new OAuthProblem(
      "invalid_client",
      `token_endpoint_auth_method ${metadata.token_endpoint_auth_method} is not supported: public clients only ("none")`,
    );
  }
  try {
    checkGrantTypes(metadata);
  } catch (error) {
    throw new OAuthProblem("invalid_client", error instanceof Error ? error.message : "unsupported metadata");
  }
  return {
    clientId,
    kind: "metadata-document",
    name: metadata.client_name ?? new URL(clientId).hostname,
    redirectUris: metadata.redirect_uris,
    clientUri: metadata.client_uri ?? null,
    createdAt: new Date().toISOString(),
  };
}
