export {
  MAX_ACTIVE_KEYS,
  createApiKey,
  generateApiKey,
  hashApiKey,
  listActiveApiKeys,
  listApiKeys,
  resolveApiKey,
  revokeApiKey,
  revokeApiKeyByStart,
  type ApiKeyIdentity,
  type ApiKeyInfo,
} from "./api-keys";
export { checkRateLimit, rateLimitHeaders } from "./rate-limit";
