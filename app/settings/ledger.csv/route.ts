import { z } from "zod";
import { getCurrentAccount } from "@/lib/accounts/current";
import { iterateLedger } from "@/lib/credits";
import { isApiError } from "@/lib/api/errors";
import { listApiKeys } from "@/lib/keys";
import { services } from "@/lib/services";
import { LEDGER_CSV_HEADER, csvRow, ledgerCsvFields, ledgerCsvFilename } from "../ledger-csv";
import { KEY_ID } from "../ledger-query";

/*
 * GET /settings/ledger.csv[?key=key_…] — the signed-in account's whole ledger as CSV, for the settings page's
 * "Download CSV" link. It lives beside the page, not under /api: it is part of the signed-in site (session cookie,
 * like the page and its server actions), while /api/* is the API-key surface that the OpenAPI document describes
 * and that API keys, CORS and rate limits are about. Nothing here takes or shows a key.
 */

export const runtime = "nodejs";

/** Rows per chunk of the response (the store is read 100 entries at a time). */
const ROWS_PER_CHUNK = 100;

const querySchema = z.object({ key: z.string().regex(KEY_ID).optional() });

function plain(status: number, message: string): Response {
  return new Response(`${message}\n`, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" },
  });
}

export async function GET(request: Request): Promise<Response> {
  const account = await getCurrentAccount();
  if (!account) return plain(401, "Sign in (/signin) to download your activity.");
  const query = querySchema.safeParse({ key: new URL(request.url).searchParams.get("key") ?? undefined });
  if (!query.success) return plain(400, "The key filter is not a key id (key_…).");

  const store = services().store;
  let keyNames: Map<string, string>;
  try {
    keyNames = new Map((await listApiKeys(store, account.id)).map((key) => [key.id, key.name]));
  } catch (error) {
    if (isApiError(error) && error.code === "unavailable")
      return plain(503, "Your activity cannot be read right now. Try again in a moment.");
    throw error;
  }
  const keyId = query.data.key ?? null;
  if (keyId && !keyNames.has(keyId)) return plain(404, "This account has no such key.");

  // Streamed, so a long ledger is never held in memory: the store is read page by page as the client reads.
  const entries = iterateLedger(store, account.id, { keyId });
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(csvRow(LEDGER_CSV_HEADER)));
    },
    async pull(controller) {
      let chunk = "";
      try {
        for (let rows = 0; rows < ROWS_PER_CHUNK; rows++) {
          const next = await entries.next();
          if (next.done) {
            if (chunk) controller.enqueue(encoder.encode(chunk));
            controller.close();
            return;
          }
          chunk += csvRow(ledgerCsvFields(next.value, keyNames));
        }
        controller.enqueue(encoder.encode(chunk));
      } catch (error) {
        // The status is already sent: the download ends as a failed one rather than a silently short file.
        console.error(
          `[settings] ledger CSV export failed (${isApiError(error) ? error.code : error instanceof Error ? error.name : "error"})`,
        );
        controller.error(error);
      }
    },
    async cancel() {
      await entries.return(undefined);
    },
  });

  return new Response(body, {
    headers: {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="${ledgerCsvFilename(new Date(), keyId)}"`,
      "cache-control": "private, no-store",
    },
  });
}
