export {
  countOverdueReservations,
  maybeSweepReservations,
  sweepExpiredReservations,
  getBalance,
  getDailyUsage,
  grantCredits,
  iterateLedger,
  listLedger,
  LEDGER_FILTER_SCAN_LIMIT,
  type DailyUsage,
  type LedgerEntry,
  type LedgerFormat,
  type LedgerPage,
  type LedgerReason,
} from "./credits";
export { grantTestCredits, TEST_CREDITS, testCreditsAvailable } from "./test-credits";
export {
  IDEMPOTENCY_TTL_MS,
  claimIdempotencyKey,
  completeIdempotencyKey,
  fingerprintRequest,
  releaseIdempotencyKey,
  type StoredResponse,
} from "./idempotency";
