import { cliExample, mcpExamples, restExamples, type Example } from "@/lib/api-docs/examples";

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

export function trySnippets({ key, origin }: { key: string; origin: string }): Snippet[] {
  const target = { origin, key };
  const examples = new Map(
    [...restExamples(target), cliExample(target), ...mcpExamples(target)].map((example) => [example.id, example]),
  );
  return SHOWN.flatMap(([id, copyLabel]) => {
    const example = examples.get(id);
    return example ? [{ ...example, copyLabel }] : [];
  });
}
