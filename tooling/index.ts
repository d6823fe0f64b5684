/*
 * What the bench (bench/), the smoke test (scripts/smoke.ts) and the tests (tests/support/) share: free ports, the
 * statistics they report, and the built standalone server.
 */
export { freePort } from "./ports";
export { mean, median, percentile } from "./stats";
export {
  REST_STORE_VARIABLES,
  StandaloneSetupError,
  assertRedisAnswers,
  copyStandalone,
  deletePrefix,
  startStandalone,
  type StandaloneOptions,
  type StandaloneServer,
} from "./standalone";
