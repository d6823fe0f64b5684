import { getEnv, installEnv, parseEnv, resetEnv } from "@/lib/env";
import { buildSettings, type Settings, type SettingsOverrides } from "@/lib/settings";
import type { Runtime } from "@/lib/jobs";
import { services } from "@/lib/services";

/**
 * The configuration a test runs with, without touching `process.env`: the variables the run started with, then each
 * layer a test (or its file's `withStore` / `withRedisStoreEnv`) put over them — a value of `undefined` unsets a
 * variable — parsed with `parseEnv` and installed as the process's configuration (`installEnv`). `process.env` itself
 * is never written: the child processes a test starts get what it passes them, and a file's settings cannot leak
 * into what a library reads from the environment.
 */
type Layer = Record<string, string | undefined>;
const layers: Layer[] = [];

function install(): void {
  if (layers.length === 0) {
    resetEnv();
    return;
  }
  installEnv(parseEnv(Object.assign({}, process.env, ...layers) as Layer));
}

/** Put `values` over the test configuration; returns the function that takes exactly this layer off again. */
export function pushEnv(values: Layer): () => void {
  const layer = { ...values };
  layers.push(layer);
  install();
  return () => {
    const index = layers.lastIndexOf(layer);
    if (index >= 0) layers.splice(index, 1);
    install();
  };
}

/** Runs `run` with these variables in the test configuration, then takes them off. */
export async function withEnv<T>(values: Layer, run: () => Promise<T>): Promise<T> {
  const restore = pushEnv(values);
  try {
    return await run();
  } finally {
    restore();
  }
}

/**
 * The modules' settings of the test configuration, with `overrides` (short timings, small limits) on top: what a test
 * passes as an argument to a domain function (`processDocument(store, { env, settings, … })`), a runner or a queue.
 */
export function testSettings(overrides: SettingsOverrides = {}): Settings {
  return buildSettings(getEnv(), overrides);
}

/**
 * The process's engine pool, work queue and delivery queue (lib/services.ts), each read when the object is spread:
 * what an entry point hands a domain function (`intake(store, { ...processRuntime(), env, settings, … })`). A test's
 * own pool goes after it.
 */
export function processRuntime(): Runtime {
  const given = services();
  return {
    get pool() {
      return given.pool;
    },
    get workQueue() {
      return given.workQueue;
    },
    get deliveries() {
      return given.deliveries;
    },
  };
}
