import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

/** One request the receiver got, and what its verification said. */
export interface ReceivedDelivery {
  headers: Record<string, string>;
  body: string;
  /** The verified body's JSON, or null when verification refused it. */
  event: unknown;
  /** Why verification refused it. */
  refused?: string;
  /** What the receiver answered (0: nothing, it hung). */
  answered: number;
  /** When it arrived (epoch ms). */
  at: number;
}

/** A scripted answer: a status, a status with headers, or `"hang"` (never answer). */
export type ScriptedAnswer = number | "hang" | { status: number; headers: Record<string, string> };

export interface WebhookReceiver {
  url: string;
  port: number;
  received: ReceivedDelivery[];
  /** The secret deliveries are verified with (set it once the account has one). */
  secret: string | null;
  /** Answers for the next requests, in order (`"hang"`: never answer); when empty, verified ones get 200. */
  script: ScriptedAnswer[];
  /** Connections the receiver has open now (a hung one must be closed by the sender at its timeout). */
  openConnections(): number;
  close(): Promise<void>;
}

/**
 * A real webhook receiver: an HTTP server on 127.0.0.1 that verifies every request with `standardwebhooks` and the
 * account's secret, as a customer's receiver would, answering `401` to one it cannot verify.
 */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedDelivery[] = [];
  const sockets = new Set<import("node:net").Socket>();
  const receiver: Partial<WebhookReceiver> = { received, secret: null, script: [] };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
      const entry: ReceivedDelivery = { headers, body, event: null, answered: 0, at: Date.now() };
      received.push(entry);
      try {
        if (!receiver.secret) throw new Error("no secret");
        entry.event = new Webhook(receiver.secret).verify(body, headers);
      } catch (error) {
        entry.refused = error instanceof Error ? error.message : String(error);
      }
      const scripted = receiver.script!.shift();
      if (scripted === "hang") return;
      const { status, headers: extra } = entry.refused
        ? { status: 401, headers: {} }
        : typeof scripted === "object"
          ? scripted
          : { status: scripted ?? 200, headers: {} };
      entry.answered = status;
      response.writeHead(status, { "content-type": "text/plain", ...extra }).end(entry.refused ?? "ok");
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}/hooks/ocr`,
    port,
    openConnections: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  }) as WebhookReceiver;
}

/** Poll `check` until it returns a value (not undefined), for up to `timeoutMs` (generous: the machine is shared). */
export async function waitFor<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 60_000,
  what = "the condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
