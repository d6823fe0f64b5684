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
export {
  checkRateLimit,
  checkReadRateLimit,
  keySettings,
  rateLimitHeaders,
  rateLimitSubject,
  type KeySettings,
  type RateLimitResult,
} from "./rate-limit";
export { actAs, actingApp } from "./acting";
