// The `ocr` executable (bundled by cli/build.mjs into cli/dist/ocr.mjs).
import { main } from "./main";

// A reader that goes away (`ocr extract a.png | head -1`) is not an error.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});

process.exitCode = await main(process.argv.slice(2));
// Normally nothing is left and the process ends here, with stdout and stderr flushed. `ocr mcp` may leave an SSE
// connection behind after the host closed stdin: don't wait for it.
setTimeout(() => process.exit(), 500).unref();
