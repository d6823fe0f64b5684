export {
  MAX_ACTIVE_KEYS,
  createApiKey,
  generateApiKey,
  hashApiKey,
  isApiKeyActive,
  listActiveApiKeys,
  listApiKeys,
  resolveApiKey,
  resolveApiKeyFrom,
  revokeApiKey,
  revokeApiKeyByStart,
  type ApiKeyIdentity,
  type ApiKeyInfo,
} from "./api-keys";
export { checkRateLimit, checkReadRateLimit, rateLimitHeaders, type RateLimitResult } from "./rate-limit";
