export {
  PASSWORD_MIN_LENGTH,
  SIGNIN_BACKOFF,
  SIGNIN_WINDOW_MS,
  accountSettings,
  type AccountSettings,
  formatWait,
  getAccount,
  getAccountByEmail,
  signIn,
  signUp,
  type SignUpSettings,
  type Account,
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
} from "./sessions";
