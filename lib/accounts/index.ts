export {
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  SIGNIN_BACKOFF,
  SIGNIN_WINDOW_MS,
  emailSchema,
  formatWait,
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
