import { execFile, spawnSync } from "node:child_process";
import http from "node:http";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { jobExamples, restExamples } from "@/lib/api-docs/examples";

/*
 * Issue 29 point 12: /docs labelled the JavaScript examples "Node 18+"; they use the global `crypto` (Node 19+ without
 * a flag), so the label says the oldest maintained Node they run on: 20. The REST example is run on the machine's own
 * Node 20, when it has one (Debian's), against a stub of the API: it must exit 0 and print what the stub answered.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");
const NODE_20 = ["/usr/bin/node", "/usr/local/bin/node"].find((bin) =>
  spawnSync(bin, ["-v"], { encoding: "utf8" }).stdout?.startsWith("v20."),
);

describe("the JavaScript examples' Node version", () => {
  it("every JavaScript example is labelled Node 20+ (it uses the global crypto: Node 19+ unflagged)", () => {
    const all = [
      ...restExamples({ origin: "https://ocr.example.com" }),
      ...jobExamples({ origin: "https://ocr.example.com" }),
    ];
    const js = all.filter((example) => example.language === "js");
    expect(js.length).toBeGreaterThanOrEqual(2);
    for (const example of js) {
      expect(example.title, example.id).toMatch(/\(Node 20\+/);
      expect(example.code).toMatch(/crypto\.randomUUID\(\)/);
    }
  });

  it.runIf(NODE_20)("the REST example runs on Node 20 and exits 0", async () => {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            success: true,
            extractedText: `read by the stub (${req.headers["idempotency-key"]?.length} chars of key)`,
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address() as { port: number };
    try {
      const example = restExamples({ origin: `http://127.0.0.1:${address.port}` }).find(
        (item) => item.id === "javascript",
      )!;
      const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile(
          NODE_20!,
          ["--input-type=module", "-e", example.code],
          { cwd: ROOT, env: { ...process.env, OCR_API_KEY: "ocr_test" }, timeout: 30_000 },
          (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
        ),
      );
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout).toContain("read by the stub (36 chars of key)");
    } finally {
      server.close();
    }
  });
});
