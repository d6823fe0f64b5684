/*
 * `/api/health`: what the route answers (the store, the engine read of the built-in samples, the event-loop delay),
 * and what a server does at start for it (the store's marker, the event-loop monitor; lib/startup.ts).
 */
export { checkHealth, checkStoreMarker, healthStatusCode } from "./health";
export { startEventLoopMonitor } from "./event-loop";
