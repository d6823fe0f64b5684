import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { encodePage } from "@/lib/jobs/payload";
import { resolveApiKey } from "@/lib/keys";
import { answerAuthorization } from "@/lib/oauth";
import { getEnv } from "@/lib/env";
import { configuredAllowList } from "@/lib/input";
import { createMcpRoute } from "@/lib/mcp";
import { getStore } from "@/lib/store";
import { createAccount, withStore, type TestAccount } from "../api/support";
import { messageOf, readEvents } from "../mcp/support";
import { MCP_URL, ORIGIN, REDIRECT_URL, postForm, serviceFetch } from "./support";

/*
 * What a connected app reaches (issue 39, points 15 and 16): the text of the jobs it started — not those the
 * account's API keys or other apps made, which its consent never named — and one rate-limit bucket for all the
 * account's apps, however many it connects. On the real Redis store, through the MCP route in process.
 */

withStore("redis");

async function register(): Promise<string> {
  const response = await serviceFetch()(`${ORIGIN}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ client_name: "reach tests", redirect_uris: [REDIRECT_URL] }),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { client_id: string }).client_id;
}

/** An app connected to `account`: its access token and its grant's id. */
async function connectApp(account: TestAccount): Promise<{ token: string; grantId: string }> {
  const clientId = await register();
  const verifier = randomBytes(32).toString("base64url");
  const params = new URLSearchParams({
    client_id: clientId,
    redirect_uri: REDIRECT_URL,
    response_type: "code",
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    resource: MCP_URL,
  });
  const answer = await answerAuthorization(getStore(), params, {
    userId: account.userId,
    origin: ORIGIN,
    allowed: true,
    allowHosts: configuredAllowList(getEnv()),
  });
  if (answer.kind !== "redirect") throw new Error(JSON.stringify(answer));
  const code = new URL(answer.location).searchParams.get("code")!;
  const response = await postForm("/oauth/token", {
    grant_type: "authorization_code",
    client_id: clientId,
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT_URL,
  });
  expect(response.status).toBe(200);
  const { access_token } = (await response.json()) as { access_token: string };
  const record = await getStore().oauth.resolveAccessToken(
    createHash("sha256").update(access_token).digest("hex"),
    Date.now(),
    60_000,
  );
  return { token: access_token, grantId: record!.grantId };
}

/** An ended one-page job of `account`, made in the store as the runner leaves one, recording `keyId` as its creator. */
async function endedJob(account: TestAccount, keyId: string | undefined): Promise<string> {
  const jobs = getStore().jobs;
  const jobId = `job_${randomBytes(16).toString("base64url")}`;
  const now = Date.now();
  const day = new Date(now).toISOString().slice(0, 10);
  const source = await jobs.putSource(jobId, new Uint8Array(8), {
    chunkBytes: 1024 * 1024,
    pendingTtlMs: 600_000,
    userId: account.userId,
    maxAccountBytes: Number.MAX_SAFE_INTEGER,
  });
  if (!source.ok) throw new Error("the account's job files are full");
  const created = await jobs.createJob(
    {
      id: jobId,
      userId: account.userId,
      ...(keyId && { keyId }),
      requestId: jobId,
      createdAt: now,
      deadline: now + 600_000,
      expiresAt: now + 1_200_000,
      fileType: "png",
      inputSource: "base64",
      bytes: 8,
      sourceChunks: source.chunks,
      pageCount: 1,
      selection: "1",
      pagesTotal: 1,
      creditsReserved: 1,
      format: "text",
      language: "eng",
    },
    {
      entry: {
        id: `led_${randomBytes(8).toString("hex")}`,
        at: new Date(now).toISOString(),
        reason: "ocr",
        requestId: jobId,
      },
      day,
      maxQueuedPages: 1_000,
      ttlMs: 600_000,
    },
  );
  expect(created.ok).toBe(true);
  await jobs.startJob(jobId, now);
  const text = `SECRET TEXT OF ${jobId}`;
  const word = { text, confidence: 95, bbox: [0.1, 0.1, 0.5, 0.15] as [number, number, number, number] };
  const page = {
    number: 1,
    width: 612,
    height: 792,
    source: "ocr" as const,
    rotation: 0 as const,
    skew: 0,
    confidence: 95,
    text,
    blocks: [{ ...word, lines: [{ ...word, words: [word] }] }],
    lineStyles: [],
  };
  await jobs.storePages(
    jobId,
    [{ page: 1, payload: encodePage({ page, language: { langs: ["eng"], auto: false }, readBy: "test", ms: 1 }) }],
    Date.now(),
  );
  await jobs.endJob(jobId, {
    end: "finish",
    now: Date.now(),
    resultTtlMs: 600_000,
    entry: {
      id: `led_${randomBytes(8).toString("hex")}`,
      at: new Date().toISOString(),
      reason: "refund",
      requestId: jobId,
    },
    day,
  });
  return jobId;
}

type Credential = { token?: string; key?: string };

const credentialHeaders = (credential: Credential): Record<string, string> => ({
  ...(credential.token && { authorization: `Bearer ${credential.token}` }),
  ...(credential.key && { "x-api-key": credential.key }),
});

function mcp(credential: Credential, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return serviceFetch()(MCP_URL, {
    method: "POST",
    headers: {
      ...credentialHeaders(credential),
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

const getExtractionCall = (jobId: string, id = 1) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "get_extraction", arguments: { job_id: jobId } },
});

/** The text of a `tools/call` answer (its content blocks), or its error's text. */
function answerText(message: unknown): string {
  const { result } = message as { result?: { content?: Array<{ text?: string }> } };
  return (result?.content ?? []).map((part) => part.text ?? "").join("\n");
}

/** `get_extraction` of `jobId`: the text it answered, or its error's text. */
async function getExtraction(credential: Credential, jobId: string, headers: Record<string, string> = {}) {
  const response = await mcp(credential, getExtractionCall(jobId), headers);
  expect(response.status).toBe(200);
  const raw = await response.text();
  const json = raw.startsWith("{") ? raw : (raw.split("\n").find((line) => line.startsWith("data: ")) ?? "").slice(6);
  return answerText(JSON.parse(json));
}

describe("a connected app reads the text of the jobs it started, no other", () => {
  it("its own job: read; a job of the account's API key, of another app, or recording no creator: not found", async () => {
    const account = await createAccount(10);
    const app = await connectApp(account);
    const other = await connectApp(account);
    const keyIdentity = await resolveApiKey(getStore(), account.key);
    const ownJob = await endedJob(account, app.grantId);
    const keyJob = await endedJob(account, keyIdentity!.keyId);
    const otherAppJob = await endedJob(account, other.grantId);
    const oldJob = await endedJob(account, undefined);

    expect(await getExtraction({ token: app.token }, ownJob)).toContain(`SECRET TEXT OF ${ownJob}`);
    for (const jobId of [keyJob, otherAppJob, oldJob]) {
      const answer = await getExtraction({ token: app.token }, jobId);
      expect(answer).not.toContain("SECRET TEXT");
      expect(answer).toMatch(/a connected app reads the text of the jobs it started/);
    }
    // The account's API key reads every job of the account, as before.
    for (const jobId of [ownJob, keyJob, otherAppJob, oldJob])
      expect(await getExtraction({ key: account.key }, jobId)).toContain(`SECRET TEXT OF ${jobId}`);
  });
});

describe("a connected app over a legacy SSE session", () => {
  it("reads its own job's text and no other, the stream on one instance and the calls relayed from another", async () => {
    const account = await createAccount(10);
    const app = await connectApp(account);
    const keyIdentity = await resolveApiKey(getStore(), account.key);
    const ownJob = await endedJob(account, app.grantId);
    const keyJob = await endedJob(account, keyIdentity!.keyId);
    // Two instances of the route sharing only the store, as two servers: the stream is held by one, the session's
    // POSTs (the calls) run on the other, and their answers are relayed to the stream through the store.
    const streamSide = createMcpRoute({ sse: { pingMs: 60_000 } });
    const callSide = createMcpRoute({ sse: { pingMs: 60_000 } });
    const opened = await streamSide.GET(
      new Request(MCP_URL, { headers: { accept: "text/event-stream", ...credentialHeaders(app) } }),
    );
    expect(opened.status).toBe(200);
    const events = readEvents(opened);
    try {
      const endpoint = (await events.next())!;
      expect(endpoint.event).toBe("endpoint");
      const post = (body: unknown, headers: Record<string, string> = {}) =>
        callSide.POST(
          new Request(new URL(endpoint.data!, MCP_URL), {
            method: "POST",
            headers: { "content-type": "application/json", ...credentialHeaders(app), ...headers },
            body: JSON.stringify(body),
          }),
        );

      expect((await post(getExtractionCall(ownJob, 1))).status).toBe(202);
      const own = messageOf(await events.next());
      expect(own).toMatchObject({ id: 1 });
      expect(answerText(own)).toContain(`SECRET TEXT OF ${ownJob}`);

      expect((await post(getExtractionCall(keyJob, 2))).status).toBe(202);
      const other = messageOf(await events.next());
      expect(other).toMatchObject({ id: 2 });
      expect(answerText(other)).not.toContain("SECRET TEXT");
      expect(answerText(other)).toMatch(/a connected app reads the text of the jobs it started/);
    } finally {
      await events.cancel();
    }
  });

  it("gets no replay of an answer the account's API key stored under the same Idempotency-Key", async () => {
    const account = await createAccount(10);
    const app = await connectApp(account);
    const keyIdentity = await resolveApiKey(getStore(), account.key);
    const keyJob = await endedJob(account, keyIdentity!.keyId);
    const idempotency = { "idempotency-key": `reach-${randomBytes(6).toString("hex")}` };
    // The key's call, stored for its retries …
    expect(await getExtraction({ key: account.key }, keyJob, idempotency)).toContain(`SECRET TEXT OF ${keyJob}`);
    // … is not the app's to replay: the same key and body from the app run as the app's own call.
    const answer = await getExtraction({ token: app.token }, keyJob, idempotency);
    expect(answer).not.toContain("SECRET TEXT");
    expect(answer).toMatch(/a connected app reads the text of the jobs it started/);
    // And the key's retry still gets its own stored answer.
    expect(await getExtraction({ key: account.key }, keyJob, idempotency)).toContain(`SECRET TEXT OF ${keyJob}`);
  });
});

describe("the rate limit of connected apps", () => {
  it("is one bucket for all the account's apps, apart from its API keys'", async () => {
    const account = await createAccount(0);
    const apps = [await connectApp(account), await connectApp(account), await connectApp(account)];
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
    const remaining: number[] = [];
    for (const app of apps) {
      const response = await mcp({ token: app.token }, ping);
      expect(response.status).toBe(200);
      remaining.push(Number(response.headers.get("ratelimit-remaining")));
    }
    const limit = getEnv().RATE_LIMIT_PER_MINUTE;
    // One bucket: each app's request used one more of it (a bucket per app would say limit - 1 three times). A window
    // that turned over between two requests starts again: the count only ever goes down within one.
    expect(remaining[0]).toBeLessThan(limit);
    expect(remaining[1]! === remaining[0]! - 1 || remaining[1] === limit - 1).toBe(true);
    expect(remaining[2]! === remaining[1]! - 1 || remaining[2] === limit - 1).toBe(true);
    expect(remaining).not.toEqual([limit - 1, limit - 1, limit - 1]);
    // The account's key has its own.
    const keyed = await mcp({ key: account.key }, ping);
    expect(Number(keyed.headers.get("ratelimit-remaining"))).toBe(limit - 1);
  });
});
