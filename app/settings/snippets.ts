import { cliExample, mcpExamples, restExamples, type Example } from "@/lib/examples";

/**
 * The "try it" snippets shown once, right after a key is created, filled with that key and this server's origin:
 * a selection of the manual's own examples (lib/examples.ts, one source for /docs and /settings, so both pages and
 * the tests that run them agree). Pure: the create-key form renders them from its action's response, the one
 * place the key exists.
 */

interface Snippet extends Example {
  /** Name of its copy button for assistive technology ("Copy the curl command"): several sit on one page. */
  copyLabel: string;
}

/** The examples shown, in order, with their copy buttons' names. */
const SHOWN: ReadonlyArray<readonly [id: string, copyLabel: string]> = [
  ["curl-base64", "Copy the curl command"],
  ["curl-url", "Copy the curl command for a URL"],
  ["cli", "Copy the command line"],
  ["claude-code", "Copy the Claude Code command"],
  ["cursor", "Copy the MCP configuration"],
];

const LOOPBACK = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\]|[^:/]+\.localhost)(?::\d+)?$/i;

/** Whether the service at `origin` is only reachable from this machine (it cannot then fetch its own samples). */
export function isLoopbackOrigin(origin: string): boolean {
  return LOOPBACK.test(origin.replace(/^https?:\/\//, ""));
}

export function trySnippets({ key, origin }: { key: string; origin: string }): Snippet[] {
  const target = { origin, key };
  const examples = new Map([...restExamples(target), cliExample(target), ...mcpExamples(target)].map((example) => [example.id, example]));
  return SHOWN.flatMap(([id, copyLabel]) => {
    const example = examples.get(id);
    if (!example) return [];
    // The service refuses to fetch loopback and private addresses (the SSRF guard), its own included.
    const note =
      id === "curl-url" && isLoopbackOrigin(origin)
        ? "The service downloads the URL itself and refuses private addresses, this local one included unless URL_ALLOW_HOSTS lets it through; deployed, it works as it is."
        : example.note;
    return [{ ...example, note, copyLabel }];
  });
}
