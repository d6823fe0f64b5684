import type { Redis } from "@upstash/redis";
import type { BinaryRedis } from "./node-redis-requester";
import { z } from "zod";
import { storeUnavailable } from "./errors";

/**
 * What every redis adapter shares: the client, the key layout, and the reply parsers (replies are parsed with zod:
 * Redis is a trust boundary, written to by other versions of the service or by hand).
 */
export interface RedisContext {
  /** An @upstash/redis client created with `automaticDeserialization: false` (see lib/store/connect.ts). */
  redis: Redis;
  /** Binary-safe SET/GET over TCP (lib/store/node-redis-requester.ts); absent on Upstash REST. */
  binary?: BinaryRedis;
  key: KeyLayout;
}

/**
 * The key layout (prefix `ocr:`): `user:{id}` hash · `email:{email}` → user id · `session:{sha256}` JSON ·
 * `apikey:{sha256}` hash (the hot lookup) · `keys:{userId}` / `revokedkeys:{userId}` hash keyId → JSON ·
 * `credits:{userId}` integer · `ledger:{userId}` list of JSON, oldest first · `usage:{userId}` hash day → pages ·
 * `reservation:{userId}:{requestId}` · `reservations:open` sorted set · `idem:{scope}` hash ·
 * `ratelimit:{bucket}:…` · `backoff:{subject}` hash · `slots:{group}` sorted set · `once:{scope}:{id}` · `mailbox:{id}` list +
 * `mailbox-open:{id}` · `meta:marker` hash (initializedAt, dataLostAt: lib/store/meta/) · `job:{jobId}` hash +
 * `job:{jobId}:pages` / `:failed` hashes + `job:{jobId}:src:{n}` chunks (bytes over TCP, base64 over REST) +
 * `job:{jobId}:render:{variant}` (a rendered result: its chunks `…:{n}`) +
 * `job-files:{userId}` sorted set (the account's stored job files and their sizes) · `jobs:{userId}` sorted set ·
 * `jobs-queued:{userId}` integer · `webhook:{userId}` hash (signing secrets, default URL: lib/store/webhooks/) +
 * `webhook-log:{userId}` and `job:{jobId}:webhook` lists of delivery attempts, newest first, +
 * `webhook-endpoint:{userId}:{receiver sha256}` hash (a failing receiver) indexed by `webhook-endpoints:{userId}` ·
 * `oauth-*`: the OAuth authorization server's clients, codes, grants and tokens (lib/store/oauth/redis.ts).
 * One place for all of it: a user's credits and ledger are written by the accounts port too (signup credits).
 */
export function keyLayout(prefix: string) {
  return {
    user: (userId: string) => `${prefix}user:${userId}`,
    email: (email: string) => `${prefix}email:${email}`,
    session: (sessionKey: string) => `${prefix}session:${sessionKey}`,
    apiKey: (hash: string) => `${prefix}apikey:${hash}`,
    keys: (userId: string) => `${prefix}keys:${userId}`,
    revokedKeys: (userId: string) => `${prefix}revokedkeys:${userId}`,
    credits: (userId: string) => `${prefix}credits:${userId}`,
    ledger: (userId: string) => `${prefix}ledger:${userId}`,
    usage: (userId: string) => `${prefix}usage:${userId}`,
    reservation: (userId: string, requestId: string) => `${prefix}reservation:${userId}:${requestId}`,
    openReservations: () => `${prefix}reservations:open`,
    idempotency: (scope: string) => `${prefix}idem:${scope}`,
    rateLimit: (bucket: string) => `${prefix}ratelimit:${bucket}`,
    backoff: (subject: string) => `${prefix}backoff:${subject}`,
    slots: (group: string) => `${prefix}slots:${group}`,
    once: (scope: string, id: string) => `${prefix}once:${scope}:${id}`,
    mailbox: (id: string) => `${prefix}mailbox:${id}`,
    mailboxOpen: (id: string) => `${prefix}mailbox-open:${id}`,
    job: (jobId: string) => `${prefix}job:${jobId}`,
    jobPages: (jobId: string) => `${prefix}job:${jobId}:pages`,
    jobFailed: (jobId: string) => `${prefix}job:${jobId}:failed`,
    jobSource: (jobId: string, chunk: number) => `${prefix}job:${jobId}:src:${chunk}`,
    /** An account's job files: a sorted set of `{jobId}:{bytes}` by when each file goes (lib/store/jobs/redis.ts). */
    jobSourceBytes: (userId: string) => `${prefix}job-files:${userId}`,
    jobRendering: (jobId: string, variant: string) => `${prefix}job:${jobId}:render:${variant}`,
    jobRenderingChunk: (jobId: string, variant: string, chunk: number) =>
      `${prefix}job:${jobId}:render:${variant}:${chunk}`,
    jobs: (userId: string) => `${prefix}jobs:${userId}`,
    jobsQueued: (userId: string) => `${prefix}jobs-queued:${userId}`,
    marker: () => `${prefix}meta:marker`,
    /** A short-lived key `/api/health` writes to learn whether Redis takes writes (lib/store/meta/redis.ts). */
    probe: () => `${prefix}meta:write-probe`,
    webhook: (userId: string) => `${prefix}webhook:${userId}`,
    webhookLog: (userId: string) => `${prefix}webhook-log:${userId}`,
    jobWebhookLog: (jobId: string) => `${prefix}job:${jobId}:webhook`,
    oauthClient: (clientKey: string) => `${prefix}oauth-client:${clientKey}`,
    oauthCode: (hash: string) => `${prefix}oauth-code:${hash}`,
    oauthCodeUsed: (hash: string) => `${prefix}oauth-code-used:${hash}`,
    oauthGrants: (userId: string) => `${prefix}oauth-grants:${userId}`,
    oauthGrantOf: (userId: string) => `${prefix}oauth-grant-of:${userId}`,
    oauthGrantUsed: (userId: string) => `${prefix}oauth-grant-used:${userId}`,
    oauthToken: (hash: string) => `${prefix}oauth-token:${hash}`,
    oauthRefresh: (hash: string) => `${prefix}oauth-refresh:${hash}`,
    oauthRefreshUsed: (hash: string) => `${prefix}oauth-refresh-used:${hash}`,
    webhookEndpoint: (userId: string, receiverId: string) => `${prefix}webhook-endpoint:${userId}:${receiverId}`,
    webhookEndpoints: (userId: string) => `${prefix}webhook-endpoints:${userId}`,
  };
}
export type KeyLayout = ReturnType<typeof keyLayout>;

/** Every Redis call goes through here: failures become `unavailable` (fail closed). */
export async function call<T>(operation: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw storeUnavailable(operation, error);
  }
}

export const integer = z.coerce.number().int();
/** The `{a, b}` integer pair several scripts return. */
export const integerPair = z.tuple([integer, integer]);
/** A flat HGETALL reply `[field, value, …]` as a record. */
export const flatHash = z.array(z.union([z.string(), z.number()])).transform((items) => {
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < items.length; i += 2) record[String(items[i])] = String(items[i + 1]);
  return record;
});
