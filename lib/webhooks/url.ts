import { ApiError, isApiError } from "@/lib/api/errors";
import { checkRemoteUrl, isAllowListed, type AllowList, type ResolveHost } from "@/lib/input";

/**
 * Check a webhook URL when it is given (a job's `webhook.url`, the account's default), so that a bad one is a `400`
 * then rather than a delivery that can never succeed: a valid URL, `https` (plain `http` only for a host in
 * `URL_ALLOW_HOSTS`), no credentials, and a host that resolves to public addresses only — the SSRF guard of
 * `imageUrl` (lib/input/fetch-remote.ts), which every delivery passes again. `allowHosts`: the configuration's
 * `URL_ALLOW_HOSTS`, parsed (`configuredAllowList(env)`, by the caller).
 *
 * @throws ApiError `invalid_request`
 */
export async function checkWebhookUrl(
  raw: string,
  {
    field = "webhook.url",
    resolveHost,
    allowHosts,
  }: { field?: string; resolveHost?: ResolveHost; allowHosts: AllowList },
): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ApiError("invalid_request", `${field} is not a valid URL`);
  }
  if (url.protocol === "http:" && !isAllowListed(url, allowHosts)) {
    throw new ApiError(
      "invalid_request",
      `${field} must be an https URL (plain http only for a host in URL_ALLOW_HOSTS)`,
    );
  }
  try {
    await checkRemoteUrl(url.href, {
      label: "webhook URL",
      allowHosts,
      resolveHost,
      signal: AbortSignal.timeout(5_000),
    });
  } catch (error) {
    if (isApiError(error) && error.code === "invalid_request")
      throw new ApiError("invalid_request", `${field}: ${error.message}`);
    if (isApiError(error))
      throw new ApiError("invalid_request", `${field}: the host ${url.hostname} could not be resolved`);
    throw error;
  }
  return url.href;
}
