export {
  AUTH_ATTEMPTS,
  AUTH_WINDOW_MS,
  PASSWORD_MIN_LENGTH,
  emailSchema,
  getAccount,
  getAccountByEmail,
  normalizeEmail,
  passwordSchema,
  signIn,
  signUp,
  type Account,
  type Credentials,
} from "./accounts";
export { hashPassword, verifyPassword } from "./password";
export {
  SESSION_COOKIE,
  SESSION_TTL_MS,
  createSession,
  deleteSession,
  getSessionAccount,
  isSecureRequest,
  sessionCookieOptions,
  type NewSession,
} from "./sessions";
