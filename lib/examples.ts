/**
 * Copy-paste examples, filled in with a server's own origin: the `/docs` page shows them with a placeholder for the
 * key (`$OCR_API_KEY` / `process.env.OCR_API_KEY` / `os.environ[...]`), the settings page with the key it has just
 * created. One source, so the two pages and the tests that run these commands agree. Shell snippets are POSIX sh:
 * no `uuidgen`, no bash-only syntax. The sample documents are `public/samples/*`, served at `/samples/*`.
 */

interface ExampleTarget {
  /** `https://ocr.example.com`: scheme, host and port, no trailing slash. */
  origin: string;
  /** A literal key, or undefined for the placeholders. */
  key?: string;
}

export interface Example {
  id: string;
  title: string;
  /** For syntax-neutral rendering: `sh`, `js`, `python`, `json`. */
  language: "sh" | "js" | "python" | "json";
  code: string;
  /** One sentence on where it goes or what it needs. */
  note?: string;
}

const quoteJson = (value: unknown) => JSON.stringify(value, null, 2);

/** How each language spells the key: the literal when there is one, else an environment variable. */
function keyIn(target: ExampleTarget) {
  return {
    shExport: target.key ? `export OCR_API_KEY='${target.key}'\n` : "",
    js: target.key ? JSON.stringify(target.key) : "process.env.OCR_API_KEY",
    python: target.key ? JSON.stringify(target.key) : 'os.environ["OCR_API_KEY"]',
    json: target.key ?? "ocr_…",
  };
}

/** REST: curl with a base64 file and with a URL, JavaScript, Python. */
export function restExamples(target: ExampleTarget): Example[] {
  const { origin } = target;
  const key = keyIn(target);
  const endpoint = `${origin}/api/ocr/process`;
  return [
    {
      id: "curl-base64",
      title: "curl, a local file (base64)",
      language: "sh",
      note: "Run from the repository's root (the sample is public/samples/scan.png), or point base64 at your own file.",
      code: `${key.shExport}printf '{"image":"%s","options":{"format":"text"}}' "$(base64 < public/samples/scan.png | tr -d '\\n')" |
  curl -sS ${endpoint} \\
    -H "x-api-key: $OCR_API_KEY" -H "content-type: application/json" \\
    -H "Idempotency-Key: $(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')" \\
    --data-binary @-`,
    },
    {
      id: "curl-url",
      title: "curl, a file at a URL",
      language: "sh",
      note: "Any public http(s) URL; this one is the sample every deployment serves.",
      code: `${key.shExport}curl -sS ${endpoint} \\
  -H "x-api-key: $OCR_API_KEY" -H "content-type: application/json" \\
  -d '{"imageUrl": "${origin}/samples/scan.pdf", "options": {"format": "markdown"}}'`,
    },
    {
      id: "javascript",
      title: "JavaScript (Node 18+, fetch)",
      language: "js",
      code: `import { readFile } from "node:fs/promises";

async function ocr(body) {
  const response = await fetch("${endpoint}", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-api-key": ${key.js},
      "idempotency-key": crypto.randomUUID(), // reuse it when you retry this request
    },
    body: JSON.stringify(body),
  });
  const result = await response.json();
  if (!result.success) throw new Error(\`\${result.error.code}: \${result.error.message}\`);
  return result;
}

const file = await readFile("public/samples/scan.png");
console.log((await ocr({ image: file.toString("base64") })).extractedText);
console.log((await ocr({ imageUrl: "${origin}/samples/report.pdf", options: { format: "json" } })).extractedText);`,
    },
    {
      id: "python",
      title: "Python (requests)",
      language: "python",
      code: `import base64, os, uuid
import requests

def ocr(body):
    response = requests.post(
        "${endpoint}",
        json=body,
        headers={"x-api-key": ${key.python}, "Idempotency-Key": str(uuid.uuid4())},
        timeout=60,
    )
    result = response.json()
    if not result["success"]:
        raise RuntimeError(f'{result["error"]["code"]}: {result["error"]["message"]}')
    return result

with open("public/samples/scan.png", "rb") as f:
    print(ocr({"image": base64.b64encode(f.read()).decode("ascii")})["extractedText"])
print(ocr({"imageUrl": "${origin}/samples/report.pdf", "options": {"format": "markdown"}})["extractedText"])`,
    },
  ];
}

/** MCP clients: Claude Code, Claude Desktop (through mcp-remote), Cursor, VS Code, the Vercel AI SDK. */
export function mcpExamples(target: ExampleTarget): Example[] {
  const url = `${target.origin}/api/mcp`;
  const key = keyIn(target);
  return [
    {
      id: "claude-code",
      title: "Claude Code",
      language: "sh",
      code: `${key.shExport}claude mcp add --transport http ocr ${url} --header "x-api-key: $OCR_API_KEY"`,
    },
    {
      id: "claude-desktop",
      title: "Claude Desktop (claude_desktop_config.json, through mcp-remote)",
      language: "json",
      note: "Settings → Developer → Edit Config. mcp-remote reads the key from env; no space after the colon in the header (some hosts split arguments on spaces).",
      code: quoteJson({
        mcpServers: {
          ocr: {
            command: "npx",
            args: ["-y", "mcp-remote", url, "--header", "x-api-key:${OCR_API_KEY}", "--transport", "http-first"],
            env: { OCR_API_KEY: key.json },
          },
        },
      }),
    },
    {
      id: "cursor",
      title: "Cursor (~/.cursor/mcp.json)",
      language: "json",
      code: quoteJson({ mcpServers: { ocr: { url, headers: { "x-api-key": key.json } } } }),
    },
    {
      id: "vscode",
      title: "VS Code (.vscode/mcp.json)",
      language: "json",
      note: target.key ? undefined : "VS Code asks for the key once and keeps it out of the file.",
      code: quoteJson(
        target.key
          ? { servers: { ocr: { type: "http", url, headers: { "x-api-key": target.key } } } }
          : {
              inputs: [{ type: "promptString", id: "ocr-api-key", description: "OCR API key", password: true }],
              servers: { ocr: { type: "http", url, headers: { "x-api-key": "${input:ocr-api-key}" } } },
            },
      ),
    },
    {
      id: "ai-sdk",
      title: "Vercel AI SDK (@ai-sdk/mcp)",
      language: "js",
      code: `import { createMCPClient } from "@ai-sdk/mcp";

const client = await createMCPClient({
  transport: { type: "http", url: "${url}", headers: { "x-api-key": ${key.js} } },
});
const tools = await client.tools(); // pass to generateText({ model, tools, prompt })
const result = await tools.extract_text.execute(
  { image_source: { type: "url", data: "${target.origin}/samples/scan.png" } },
  { toolCallId: "1", messages: [] },
);
console.log(result.content[0].text);
await client.close();`,
    },
  ];
}

/** The `ocr` command line of this repository. */
export function cliExample(target: ExampleTarget): Example {
  return {
    id: "cli",
    title: "Command line (this repository's ocr CLI)",
    language: "sh",
    note: "From a clone of the repository after npm install; see docs/cli.md for npx and global installs.",
    // FETCH_MCP_SERVER_API_KEY is the variable the CLI reads first (before OCR_API_KEY): set it, so an older value
    // of it in the user's shell cannot win.
    code: `export FETCH_MCP_SERVER_API_KEY=${target.key ? `'${target.key}'` : '"$OCR_API_KEY"'} OCR_BASE_URL=${target.origin}
npx ocr extract public/samples/scan.png
npx ocr extract public/samples/report.pdf --format markdown`,
  };
}
