// A server instance for the multi-process job tests, without Next: the same route handlers and the same job runner
// as a built server (instrumentation.ts starts the runner there), served by node:http. Started by
// tests/support/instance.ts with `tsx --conditions=react-server`; its configuration comes from the environment
// (REDIS_URL, REDIS_PREFIX, OCR_ENGINE_PROCESSES) and its arguments, as `npm run worker`'s (`--name`, `--settings`
// '<json>': lib/settings). Prints `ready <port>` when it listens.
import http from "node:http";
import { parseArgs } from "node:util";
import * as credits from "@/app/api/credits/route";
import * as process_ from "@/app/api/ocr/process/route";
import * as jobs from "@/app/api/ocr/jobs/route";
import * as job from "@/app/api/ocr/jobs/[id]/route";
import * as result from "@/app/api/ocr/jobs/[id]/result/route";
import { ensureJobRunner, stopJobRunner } from "@/lib/jobs";
import { services } from "@/lib/services";
import { installProcessSettings, parseSettingsArgument } from "@/lib/settings";

const { values: args } = parseArgs({ options: { name: { type: "string" }, settings: { type: "string" } } });
const overrides = args.settings ? parseSettingsArgument(args.settings) : {};
if (args.name) overrides.jobs = { ...overrides.jobs, workerName: args.name };
// Its `main`: the routes' contexts (lib/services.ts: the settings, and the queues and pool built with them) read them.
installProcessSettings(overrides);

type Handler = (req: Request) => Promise<Response>;
type Module = Partial<Record<string, Handler>>;

const routes: Array<[RegExp, Module]> = [
  [/^\/api\/ocr\/process$/, process_ as unknown as Module],
  [/^\/api\/ocr\/jobs$/, jobs as unknown as Module],
  [/^\/api\/ocr\/jobs\/[^/]+$/, job as unknown as Module],
  [/^\/api\/ocr\/jobs\/[^/]+\/result$/, result as unknown as Module],
  [/^\/api\/credits$/, credits as unknown as Module],
];

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "127.0.0.1"}`);
    const handler = routes.find(([pattern]) => pattern.test(url.pathname))?.[1][req.method ?? "GET"];
    if (!handler) {
      res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
    const body = chunks.length > 0 && req.method !== "GET" && req.method !== "HEAD" ? Buffer.concat(chunks) : undefined;
    const response = await handler(new Request(url, { method: req.method, headers, body }));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  } catch (error) {
    res.writeHead(500).end(String(error));
  }
});

const given = services();
const { pool } = given;
await pool.warm();
ensureJobRunner(given);
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const address = server.address();
  console.info(`ready ${typeof address === "object" && address ? address.port : 0}`);
});

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, async () => {
    server.close();
    await stopJobRunner();
    await pool.terminate();
    process.exit(0);
  });
}
