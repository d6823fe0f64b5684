import type { MetaStore, StoreMarker } from "./port";

/** The marker for one process: never lost while the process lives (and the memory store's data dies with it). */
export function createMemoryMetaStore(): MetaStore {
  let stored: StoreMarker | null = null;
  return {
    async memory() {
      return null;
    },
    async probeWrite() {
      return null;
    },
    async readMarker() {
      return stored && { ...stored };
    },
    async createMarker(marker) {
      stored ??= { ...marker };
      return { ...stored };
    },
    async writeMarker(marker) {
      stored = { ...marker };
    },
  };
}
