/**
 * What hostile TIFFs cost the other tenants of a BUILT server (issue 39 points 9, 10 and 14): a victim's one-page
 * read, alone and while an attacker's documents are in flight, and the server's event loop meanwhile (the longest
 * `GET /api/health` answer). Attacks: a TIFF directory bomb (1 MB of entries sharing one array of values), a fax
 * page of 100 KB that is not fax data, and huge TIFF pages (49 megapixels of grey).
 *
 *   npx tsx bench/hostile.ts [--server-dir DIR] [--attackers N]
 *
 * Starts `<server-dir>/.next/standalone/server.js` on Redis (REDIS_URL) like bench/load.ts, with two accounts.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { writeTiff, writeTiffDirectoryBomb } from "../scripts/tiff-writer";
import { startStandalone } from "./standalone";

const { values: args } = parseArgs({
  options: { "server-dir": { type: "string" }, attackers: { type: "string", default: "2" } },
});
const serverDir = path.resolve(args["server-dir"] ?? path.resolve(import.meta.dirname, ".."));
const attackers = Number(args.attackers);
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const victimFile = path.resolve(import.meta.dirname, "../tests/.generated/paragraph.png");

function admin(env: NodeJS.ProcessEnv, argv: string[]): Promise<string> {
  const child = spawn(
    path.join(serverDir, "node_modules/.bin/tsx"),
    ["--conditions=react-server", "scripts/admin.ts", ...argv],
    {
      cwd: serverDir,
      env,
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.once("exit", (code) =>
      code === 0 ? resolve(out.trim().split("\n").at(-1)!) : reject(new Error(`admin exited ${code}`)),
    ),
  );
}

function noise(length: number): Uint8Array {
  let seed = 39;
  return Uint8Array.from({ length }, () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) >> 23);
}

const attacks: Record<string, () => Uint8Array> = {
  "directory bomb (1 MB, 10 000-value tags)": () => writeTiffDirectoryBomb(1_000_000, 10_000),
  "fax page of 100 KB noise (Group 4)": () =>
    writeTiff([
      {
        width: 1728,
        height: 2200,
        data: noise(100_000),
        bitsPerSample: 1,
        samplesPerPixel: 1,
        photometric: 0,
        compression: 1,
        declared: { compression: 4 },
      },
    ]),
  "huge TIFF page (7000 × 7000 grey, Deflate)": () => {
    const side = 7000;
    const data = new Uint8Array(side * side).fill(255);
    for (let y = 100; y < side; y += 120) data.fill(0, y * side + 200, y * side + side - 200);
    return writeTiff([
      { width: side, height: side, data, bitsPerSample: 8, samplesPerPixel: 1, photometric: 1, compression: 8 },
    ]);
  },
};

async function main() {
  const server = await startStandalone({ serverDir, redisUrl, workers: 2, env: {} });
  try {
    const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: redisUrl, REDIS_PREFIX: server.prefix };
    const email = `victim-${randomBytes(4).toString("hex")}@example.com`;
    await admin(env, ["create-user", "--email", email, "--password", randomBytes(18).toString("base64url")]);
    const victimKey = await admin(env, ["create-key", "--email", email, "--name", "victim"]);
    const post = async (key: string, bytes: Uint8Array) => {
      const started = performance.now();
      try {
        return await send(key, bytes, started);
      } catch (error) {
        return { status: 0, code: `(${String(error).slice(0, 40)})`, ms: Math.round(performance.now() - started) };
      }
    };
    const send = async (key: string, bytes: Uint8Array, started: number) => {
      const response = await fetch(`${server.url}/api/ocr/process`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": key },
        body: JSON.stringify({ image: Buffer.from(bytes).toString("base64") }),
      });
      const body = (await response.json()) as { error?: { code?: string } };
      return { status: response.status, code: body.error?.code, ms: Math.round(performance.now() - started) };
    };
    const victim = new Uint8Array(fs.readFileSync(victimFile));
    // Warm the engines, then the victim alone.
    await post(victimKey, victim);
    const alone: number[] = [];
    for (let i = 0; i < 3; i++) alone.push((await post(victimKey, victim)).ms);
    console.log(`victim alone: ${alone.join(", ")} ms`);
    for (const [name, make] of Object.entries(attacks)) {
      const bytes = make();
      let done = false;
      let worstHealth = 0;
      const health = (async () => {
        while (!done) {
          const started = performance.now();
          await fetch(`${server.url}/api/health`)
            .then((r) => r.arrayBuffer())
            .catch(() => undefined);
          worstHealth = Math.max(worstHealth, performance.now() - started);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();
      const attack = Array.from({ length: attackers }, () => post(server.key, bytes));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const victimRead = await post(victimKey, victim);
      const answers = await Promise.all(attack);
      done = true;
      await health;
      console.log(
        `${name} ×${attackers} (${Math.round(bytes.length / 1000)} KB): attacker ${answers.map((a) => `${a.status} ${a.code ?? ""} ${a.ms} ms`).join("; ")}` +
          ` | victim ${victimRead.status} ${victimRead.ms} ms | longest /api/health ${Math.round(worstHealth)} ms`,
      );
    }
  } finally {
    await server.stop();
  }
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
