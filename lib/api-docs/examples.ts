/**
 * Copy-paste examples, filled in with a server's own origin: the `/docs` page shows them with a placeholder for the
 * key (`$OCR_API_KEY` / `process.env.OCR_API_KEY` / `os.environ[...]`), the settings page with the key it has just
 * created. One source, so the two pages and the tests that run these commands agree. Shell snippets are POSIX sh:
 * no `uuidgen`, no bash-only syntax. The sample documents are `public/samples/*`, served at `/samples/*`; an `imageUrl`
 * naming them on the server's own origin is read from its files, so the URL examples work on a local server too
 * (lib/input/own-samples.ts). Every example exits non-zero when the service answers an error (curl
 * `--fail-with-body`, a thrown error, an `isError` tool result), so a script that runs one notices.
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

/** REST: curl with a local file (multipart, raw body, base64) and with a URL, JavaScript, Python. */
export function restExamples(target: ExampleTarget): Example[] {
  const { origin } = target;
  const key = keyIn(target);
  const endpoint = `${origin}/api/ocr/process`;
  return [
    {
      id: "curl-file",
      title: "curl, a local file (multipart)",
      language: "sh",
      note:
        'The file in the "file" field, each option its own field (format, language, pages). Files up to MAX_INLINE_BYTES ' +
        "(20 MB self-hosted, 4 MB on Vercel); larger ones by URL. Run from the repository's root, or point -F at your own file.",
      code: `${key.shExport}curl -sS --fail-with-body ${endpoint} \\
  -H "x-api-key: $OCR_API_KEY" \\
  -H "Idempotency-Key: $(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')" \\
  -F file=@public/samples/scan.png -F format=text`,
    },
    {
      id: "curl-raw",
      title: "curl, a local file as the body",
      language: "sh",
      note: "The file's bytes as the body with its type (application/pdf, image/jpeg, image/png, image/webp, image/tiff), the options in the query.",
      code: `${key.shExport}curl -sS --fail-with-body "${endpoint}?format=markdown" \\
  -H "x-api-key: $OCR_API_KEY" -H "content-type: application/pdf" \\
  --data-binary @public/samples/scan.pdf`,
    },
    {
      id: "curl-base64",
      title: "curl, a local file as base64 JSON",
      language: "sh",
      note: "Run from the repository's root (the sample is public/samples/scan.png), or point base64 at your own file.",
      code: `${key.shExport}printf '{"image":"%s","options":{"format":"text"}}' "$(base64 < public/samples/scan.png | tr -d '\\n')" |
  curl -sS --fail-with-body ${endpoint} \\
    -H "x-api-key: $OCR_API_KEY" -H "content-type: application/json" \\
    -H "Idempotency-Key: $(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')" \\
    --data-binary @-`,
    },
    {
      id: "curl-url",
      title: "curl, a file at a URL",
      language: "sh",
      note: `Any public http(s) URL. This one is the sample every deployment serves, which the server reads from its own files, so it works on a local server too; other private or local addresses are refused unless URL_ALLOW_HOSTS lets them through.`,
      code: `${key.shExport}curl -sS --fail-with-body ${endpoint} \\
  -H "x-api-key: $OCR_API_KEY" -H "content-type: application/json" \\
  -d '{"imageUrl": "${origin}/samples/scan.pdf", "options": {"format": "markdown"}}'`,
    },
    {
      id: "javascript",
      title: "JavaScript (Node 20+, fetch)",
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
  const result = await response.json().catch(() => undefined);
  // An error answer throws, so the script exits non-zero (1) with the code and message.
  if (!response.ok || !result?.success) {
    throw new Error(result?.error ? \`\${result.error.code}: \${result.error.message}\` : \`HTTP \${response.status}\`);
  }
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
    if not response.ok:  # an error answer raises, so the script exits non-zero (1) with the code and message
        try:
            error = response.json()["error"]
        except (ValueError, KeyError):
            response.raise_for_status()  # not the service's JSON (a proxy's page): the HTTP status
        raise RuntimeError(f'{error["code"]}: {error["message"]}')
    return response.json()

with open("public/samples/scan.png", "rb") as f:
    print(ocr({"image": base64.b64encode(f.read()).decode("ascii")})["extractedText"])
print(ocr({"imageUrl": "${origin}/samples/report.pdf", "options": {"format": "markdown"}})["extractedText"])`,
    },
  ];
}

/**
 * MCP clients that sign in with OAuth (docs/mcp.md#sign-in-with-oauth-claudeai-chatgpt-cursor-vs-code-claude-code):
 * only the URL to paste; the client opens the browser for the sign-in and the consent. No key in any of them.
 */
export function mcpSignInExamples(target: Pick<ExampleTarget, "origin">): Example[] {
  const url = `${target.origin}/api/mcp`;
  return [
    {
      id: "oauth-claude-chatgpt",
      title: "claude.ai, Claude Desktop, ChatGPT: the URL to paste",
      language: "sh",
      note: "claude.ai / Claude Desktop: Settings → Connectors → Add custom connector. ChatGPT: Settings → Apps & Connectors → Advanced → developer mode, then Create (authentication: OAuth). Then Connect: sign in and allow.",
      code: url,
    },
    {
      id: "oauth-claude-code",
      title: "Claude Code",
      language: "sh",
      note: "Then /mcp → ocr → Authenticate: the browser opens on the sign-in and consent page.",
      code: `claude mcp add --transport http ocr ${url}`,
    },
    {
      id: "oauth-cursor",
      title: "Cursor (~/.cursor/mcp.json)",
      language: "json",
      note: "No headers: Cursor shows Needs login; click it.",
      code: quoteJson({ mcpServers: { ocr: { url } } }),
    },
    {
      id: "oauth-vscode",
      title: "VS Code (.vscode/mcp.json)",
      language: "json",
      note: "VS Code asks you to sign in when the server starts.",
      code: quoteJson({ servers: { ocr: { type: "http", url } } }),
    },
    {
      id: "oauth-mcp-remote",
      title: "Any stdio-only client, through mcp-remote",
      language: "json",
      note: "mcp-remote opens the browser itself and keeps the tokens in ~/.mcp-auth.",
      code: quoteJson({ mcpServers: { ocr: { command: "npx", args: ["-y", "mcp-remote", url] } } }),
    },
  ];
}

/** MCP clients with an API key: Claude Code, Claude Desktop (through mcp-remote), Cursor, VS Code, the Vercel AI SDK. */
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
try {
  const tools = await client.tools(); // pass to generateText({ model, tools, prompt })
  const result = await tools.extract_text.execute(
    { image_source: { type: "url", data: "${target.origin}/samples/scan.png" } },
    { toolCallId: "1", messages: [] },
  );
  // A failure is a result too (isError, its text starts with the error code): throw it, so the script exits 1.
  if (result.isError) throw new Error(result.content[0].text);
  console.log(result.content[0].text);
} finally {
  await client.close();
}`,
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
    // OCR_API_KEY, as in the README and every other example here. The CLI reads FETCH_MCP_SERVER_API_KEY before it
    // (cli/src/config.ts): unset, so an older value of it in the user's shell cannot win.
    code: `export ${target.key ? `OCR_API_KEY='${target.key}' ` : ""}OCR_BASE_URL=${target.origin}${target.key ? "" : "  # and OCR_API_KEY: your key"}
unset FETCH_MCP_SERVER_API_KEY  # the CLI reads it before OCR_API_KEY
npx ocr extract public/samples/scan.png
npx ocr extract public/samples/report.pdf --format markdown`,
  };
}

/**
 * Asynchronous jobs (docs/api.md#jobs): submit a document, poll its status as often as `Retry-After` says, fetch the
 * result part after part (`next`, or `Link: rel="next"`). Each stops with a non-zero exit status when the service
 * answers an error or the job does not succeed, so a script that runs one notices. The curl one runs in a subshell,
 * so its `set -e` and `exit` end the subshell, not the terminal it was pasted into.
 */
export function jobExamples(target: ExampleTarget): Example[] {
  const { origin } = target;
  const key = keyIn(target);
  return [
    {
      id: "job-curl",
      title: "curl: submit a job, poll it, fetch the result",
      language: "sh",
      note:
        "POSIX sh and curl 7.76 or newer. Prints the job, then each part of the result as JSON (pipe a part through " +
        "jq -r .extractedText for its text alone). Exits 22 with the error's body when the service answers an error, 1 " +
        "when the job did not succeed.",
      code: `${key.shExport}( set -e
  api=${origin}
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  # 1. Submit the file (multipart: the file in "file", each option a field): 202 Accepted, the job's URL in Location.
  #    Over the inline limit (20 MB; 4 MB on Vercel), send JSON {"imageUrl":"https://…"} instead (up to 200 MB).
  curl -sS --fail-with-body "$api/api/ocr/jobs" -D "$tmp/headers" \\
    -H "x-api-key: $OCR_API_KEY" \\
    -H "Idempotency-Key: $(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')" \\
    -F file=@public/samples/scan.pdf -F format=text
  echo
  job=$(grep -i '^location:' "$tmp/headers" | tr -d '\\r' | sed 's/^[^:]*: *//')
  # 2. Poll: while the job is queued or running, Retry-After says how many seconds to wait
  while :; do
    curl -sS --fail-with-body "$api$job" -H "x-api-key: $OCR_API_KEY" -D "$tmp/headers" -o "$tmp/job.json" || { cat "$tmp/job.json"; exit 22; }
    delay=$(grep -i '^retry-after:' "$tmp/headers" | tr -dc '0-9')
    [ -n "$delay" ] || break
    sleep "$delay"
  done
  cat "$tmp/job.json"; echo
  grep -q '"status":"succeeded"' "$tmp/job.json"
  # 3. The result, part by part: a part that does not hold every page names the next in Link: <…>; rel="next"
  part="$job/result"
  while [ -n "$part" ]; do
    curl -sS --fail-with-body "$api$part" -H "x-api-key: $OCR_API_KEY" -D "$tmp/headers"
    echo
    part=$(grep -i '^link:' "$tmp/headers" | sed -n 's/.*<\\([^>]*\\)>; *rel="next".*/\\1/p')
  done
)`,
    },
    {
      id: "job-javascript",
      title: "JavaScript (Node 20+, fetch): a job",
      language: "js",
      note: "Prints the text part after part; progress goes to stderr. Throws (exit status 1) on an error answer or a job that did not succeed.",
      code: `import { readFile } from "node:fs/promises";

const api = "${origin}";

async function call(path, init = {}) {
  const response = await fetch(api + path, { ...init, headers: { "x-api-key": ${key.js}, ...init.headers } });
  const body = await response.json().catch(() => undefined);
  if (!response.ok || !body?.success) {
    throw new Error(body?.error ? \`\${body.error.code}: \${body.error.message}\` : \`HTTP \${response.status}\`);
  }
  return { body, retryAfter: Number(response.headers.get("retry-after") ?? 1) };
}

// 1. Submit the file as the body, its options in the query: 202 Accepted with the job. Over the inline limit (20 MB;
//    4 MB on Vercel), send JSON { imageUrl: "https://…" } instead (up to 200 MB).
const file = await readFile("public/samples/scan.pdf");
let { body: job } = await call("/api/ocr/jobs?format=text", {
  method: "POST",
  headers: { "content-type": "application/pdf", "idempotency-key": crypto.randomUUID() },
  body: file,
});

// 2. Poll while it is queued or running, as often as Retry-After says
let wait = 1;
while (job.status === "queued" || job.status === "running") {
  await new Promise((resolve) => setTimeout(resolve, wait * 1000));
  ({ body: job, retryAfter: wait } = await call(job.links.self));
  console.error(\`\${job.status}: \${job.pagesDone + job.pagesFailed} of \${job.pagesTotal} pages\`);
}
if (job.status !== "succeeded") throw new Error(\`job \${job.status}: \${job.error?.code}: \${job.error?.message}\`);
for (const failed of job.failedPages) console.error(\`page \${failed.page} failed: \${failed.code}\`);

// 3. The result, part by part (one part unless it is over ~4 MB)
for (let next = job.links.result; next; ) {
  const { body: part } = await call(next);
  process.stdout.write(part.extractedText + "\\n");
  next = part.next;
}`,
    },
    {
      id: "job-python",
      title: "Python (standard library only): a job",
      language: "python",
      note: "Python 3.8+, no packages. Prints the text part after part; exits 1 with the error's code and message on an error answer or a job that did not succeed.",
      code: `import json, os, sys, time, urllib.error, urllib.request, uuid

API = "${origin}"
KEY = ${key.python}

def call(path, data=None, headers={}):
    request = urllib.request.Request(API + path, data=data, headers={"x-api-key": KEY, **headers})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.load(response), int(response.headers.get("retry-after", "1"))
    except urllib.error.HTTPError as error:  # 4xx and 5xx: exit 1 with the service's code and message
        try:
            detail = json.load(error)["error"]
        except (ValueError, KeyError):
            sys.exit(f"HTTP {error.code}")
        sys.exit(f'{detail["code"]}: {detail["message"]}')

# 1. Submit the file as the body, its options in the query: 202 Accepted with the job. Over the inline limit
#    (20 MB; 4 MB on Vercel), send JSON {"imageUrl": "https://…"} instead (up to 200 MB).
with open("public/samples/scan.pdf", "rb") as f:
    headers = {"content-type": "application/pdf", "Idempotency-Key": str(uuid.uuid4())}
    job, _ = call("/api/ocr/jobs?format=text", f.read(), headers)

# 2. Poll while it is queued or running, as often as Retry-After says
wait = 1
while job["status"] in ("queued", "running"):
    time.sleep(wait)
    job, wait = call(job["links"]["self"])
    print(f'{job["status"]}: {job["pagesDone"] + job["pagesFailed"]} of {job["pagesTotal"]} pages', file=sys.stderr)
if job["status"] != "succeeded":
    sys.exit(f'job {job["status"]}: {job.get("error")}')
for failed in job["failedPages"]:
    print(f'page {failed["page"]} failed: {failed["code"]}', file=sys.stderr)

# 3. The result, part by part (one part unless it is over ~4 MB)
next_part = job["links"]["result"]
while next_part:
    part, _ = call(next_part)
    print(part["extractedText"])
    next_part = part["next"]`,
    },
  ];
}
