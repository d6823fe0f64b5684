// `npm run dev`: build the OCR engine bundle (the server runs it in child processes), keep rebuilding it when lib/
// changes, and run the development server — Next.js inside scripts/serve.mjs, which passes the socket's address to
// the app and cuts off slow clients — with the arguments given (`npm run dev -- -p 4000`). Idle engine processes
// running an old bundle are replaced on the next job (lib/ocr/pool/pool.ts).
import { spawn } from "node:child_process";
import path from "node:path";
import * as esbuild from "esbuild";
import { engineBuildOptions, pdfThreadBuildOptions } from "./build-engine.mjs";

const root = path.resolve(import.meta.dirname, "..");
const context = await esbuild.context(engineBuildOptions());
await context.rebuild();
await context.watch();
// The searchable PDF's worker thread (lib/ocr/render/pdf-thread.ts): a new thread per PDF, so a rebuild is used at once.
const pdfContext = await esbuild.context(pdfThreadBuildOptions());
await pdfContext.rebuild();
await pdfContext.watch();

// The IPC channel is how the server learns that this process is gone (scripts/serve.mjs stops when it closes): killed
// with SIGKILL, this process cannot pass a signal on, and the server was left serving on its own.
const next = spawn(process.execPath, [path.join(root, "scripts/serve.mjs"), "--dev", ...process.argv.slice(2)], {
  cwd: root,
  stdio: ["inherit", "inherit", "inherit", "ipc"],
});
/** How long the server gets to stop after Ctrl-C / SIGTERM before it is killed (it stops in about a second). */
const STOP_TIMEOUT_MS = 10_000;
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    next.kill(signal);
    setTimeout(() => next.kill("SIGKILL"), STOP_TIMEOUT_MS).unref();
  });
}
next.on("exit", async (code, signal) => {
  await Promise.all([context.dispose(), pdfContext.dispose()]);
  process.exit(signal ? 1 : (code ?? 0));
});
