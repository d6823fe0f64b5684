import { randomBytes } from "node:crypto";
import { buildSettings } from "@/lib/settings";
import { getEnv } from "@/lib/env";
import { openInlineJob, type InlineJob } from "@/lib/jobs";
import type { Store } from "@/lib/store";

/**
 * The reservation of a document read in its request (lib/jobs/inline.ts), with nothing read: what a request holds
 * between its `createJob` and its end. For the tests of the reservations' sweep (no vitest here: a child process
 * of tests/credits/hold-reservations.ts runs it too).
 */
export function holdReadJob(
  store: Store,
  {
    userId,
    pages,
    deadline,
    requestId = `req_${randomBytes(8).toString("hex")}`,
  }: {
    userId: string;
    pages: number;
    deadline: number;
    requestId?: string;
  },
): Promise<InlineJob> {
  return openInlineJob(store, {
    document: {
      type: "pdf",
      pageCount: pages,
      selectedPages: Array.from({ length: pages }, (_, i) => i + 1),
      language: { langs: ["eng"], auto: false },
    },
    bytes: new Uint8Array(0),
    inputSource: "base64",
    format: "text",
    account: { userId },
    requestId,
    deadline,
    settings: buildSettings(getEnv()).jobs,
    name: "test-hold",
  });
}
