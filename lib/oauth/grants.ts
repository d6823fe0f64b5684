import type { Store } from "@/lib/store";
import { isMetadataDocumentId } from "./clients";

/** An app the account authorized, as the settings page shows it. */
export interface ConnectedApp {
  id: string;
  name: string;
  /** Where the app says it is from: its metadata document's host, or null for a registered app. */
  host: string | null;
  scopes: string[];
  createdAt: string;
  lastUsedAt: string | null;
}

/** The account's connected apps, most recently authorized first. */
export async function listConnectedApps(store: Store, userId: string): Promise<ConnectedApp[]> {
  const grants = await store.oauth.listGrants(userId);
  return grants
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
    .map((grant) => ({
      id: grant.id,
      name: grant.clientName,
      host: isMetadataDocumentId(grant.clientId) ? new URL(grant.clientId).host : null,
      scopes: grant.scopes,
      createdAt: grant.createdAt,
      lastUsedAt: grant.lastUsedAt,
    }));
}

/**
 * End an app's access: every token of it stops working on its next use, and its open SSE streams close within their
 * keep-alive interval. False when it is not an app of this account.
 */
export async function revokeConnectedApp(
  store: Store,
  { userId, grantId }: { userId: string; grantId: string },
): Promise<boolean> {
  return store.oauth.revokeGrant(userId, grantId);
}
