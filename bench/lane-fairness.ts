// One account's PDFs against another's on a running server (issue 29, point 5):
// `tsx --conditions=react-server bench/lane-fairness.ts <base URL>`, with the server's REDIS_URL and REDIS_PREFIX
// in the environment (the accounts are made in its store).
//
// Times another account's 2-page born-digital PDF alone, then beside two nested-forms PDFs of one account (each
// opened until its work budget, 10 s: `ocrSettings().maxPdfWorkMs`) sent a second before it. Prints the times as JSON.
import { readFileSync } from "node:fs";
import path from "node:path";
import { grantCredits } from "@/lib/credits";
import { createApiKey } from "@/lib/keys";
import { getStore } from "@/lib/store";

const base = process.argv[2] ?? "http://127.0.0.1:3000";
const generated = path.resolve(import.meta.dirname, "../tests/.generated");
const nested = readFileSync(path.join(generated, "hostile/nested-forms.pdf")).toString("base64");
const bornDigital = readFileSync(path.join(generated, "born-digital.pdf")).toString("base64");

async function account(name: string): Promise<string> {
  const userId = `usr_${name}${Date.now().toString(36)}`;
  await grantCredits(getStore(), { userId, credits: 100 });
  return (await createApiKey(getStore(), { userId, name })).key;
}

async function ocr(key: string, image: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const response = await fetch(`${base}/api/ocr/process`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({ image }),
  });
  await response.arrayBuffer();
  return { status: response.status, ms: Math.round(performance.now() - started) };
}

const attacker = await account("attacker");
const victim = await account("victim");
// Warm: the engine processes start, the victim's PDF read once.
await ocr(victim, bornDigital);
const alone = await ocr(victim, bornDigital);
const flood = [ocr(attacker, nested), ocr(attacker, nested)];
await new Promise((resolve) => setTimeout(resolve, 1_000));
const beside = await ocr(victim, bornDigital);
const hostile = await Promise.all(flood);
console.info(
  JSON.stringify({ victimAloneMs: alone.ms, victimBesideMs: beside.ms, victimStatus: beside.status, hostile }),
);
await getStore().close();
