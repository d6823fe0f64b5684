export {
  API_KEY_PREFIX,
  API_KEY_START_LENGTH,
  LAST_USED_INTERVAL_MS,
  MAX_ACTIVE_KEYS,
  apiKeyInfoSchema,
  apiKeyNameSchema,
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
