import { http, HttpResponse } from "msw";
import { setupServer } from "msw/node";
import { createNodeRedisRequester } from "@/lib/store/node-redis-requester";

type Reply = string | number | null | Reply[];

export interface UpstashBridge {
  url: string;
  token: string;
  /** HTTP requests answered so far, by path (`/`, `/pipeline`, `/multi-exec`). */
  requests: Record<string, number>;
  /** How many of them asked for base64-encoded results. */
  base64Requests: number;
  close(): Promise<void>;
}

/**
 * Upstash's REST protocol, served by msw and executed on a real Redis: `POST /` (one command), `/pipeline` and
 * `/multi-exec` (arrays of `{ result } | { error }`), `Authorization: Bearer <token>`, and results base64-encoded
 * when the client sends `Upstash-Encoding: base64` (the default of @upstash/redis). Scripts go through the same
 * requester as the TCP adapter, which strips the Upstash-only `#!lua flags=` line for stock Redis.
 */
export function startUpstashBridge({
  redisUrl,
  url = "https://bridge.upstash.test",
  token = "bridge-token",
}: {
  redisUrl: string;
  url?: string;
  token?: string;
}): UpstashBridge {
  const requester = createNodeRedisRequester(redisUrl);
  const requests: Record<string, number> = {};
  const counters = { base64Requests: 0 };

  const route =
    (path: "pipeline" | "multi-exec" | undefined) =>
    async ({ request }: { request: Request }) => {
      const name = `/${path ?? ""}`;
      requests[name] = (requests[name] ?? 0) + 1;
      if (request.headers.get("authorization") !== `Bearer ${token}`) {
        return HttpResponse.json({ error: "Unauthorized" }, { status: 401 });
      }
      const base64 = request.headers.get("upstash-encoding")?.toLowerCase() === "base64";
      if (base64) counters.base64Requests += 1;
      const body: unknown = await request.json();
      const response: unknown = await requester.request({ path: path ? [path] : undefined, body });
      if (path) {
        const items = Array.isArray(response) ? response : [];
        return HttpResponse.json(items.map((item) => encodeResponse(item, base64)));
      }
      const single = encodeResponse(response, base64);
      return HttpResponse.json(single, { status: "error" in single ? 400 : 200 });
    };

  const server = setupServer(
    http.post(url, route(undefined)),
    http.post(`${url}/`, route(undefined)),
    http.post(`${url}/pipeline`, route("pipeline")),
    http.post(`${url}/multi-exec`, route("multi-exec")),
  );
  server.listen({ onUnhandledFrame: "error" });

  return {
    url,
    token,
    requests,
    get base64Requests() {
      return counters.base64Requests;
    },
    async close() {
      server.close();
      await requester.close();
    },
  };
}

function encodeResponse(response: unknown, base64: boolean): { result: Reply } | { error: string } {
  if (typeof response === "object" && response !== null && "error" in response && typeof response.error === "string") {
    return { error: response.error };
  }
  const result = typeof response === "object" && response !== null && "result" in response ? response.result : null;
  return { result: encodeReply(result, base64) };
}

function encodeReply(value: unknown, base64: boolean): Reply {
  if (value === null || value === undefined) return null;
  if (typeof value === "number") return value;
  if (Array.isArray(value)) return value.map((item) => encodeReply(item, base64));
  const text = String(value);
  // Upstash leaves status replies such as OK readable; everything else is base64 when asked.
  return base64 && text !== "OK" ? Buffer.from(text, "utf8").toString("base64") : text;
}
