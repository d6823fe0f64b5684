import { createHash } from "node:crypto";
import { VIEWER_SCRIPT } from "./app-script";

/*
 * The viewer's one HTML document (the `ui://` resource): its style and script inline, a Content-Security-Policy that
 * allows exactly those two (by hash), images only from `data:` (the page images come in tool results), and no
 * connection anywhere: everything the view shows comes through the host, by tool calls.
 */

const STYLE = `
:root { color-scheme: light dark; --bg: #fff; --fg: #1b1b1f; --muted: #5f6368; --line: #d7d9de;
  --high: #1a7f37; --mid: #b7791f; --low: #c62828; --review: #d0021b; --on: #1565c0; }
[data-theme="dark"] { --bg: #1e1f22; --fg: #e8e8ea; --muted: #a0a4ab; --line: #3a3d42; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; background: var(--bg); color: var(--fg); }
header { display: flex; flex-wrap: wrap; gap: 6px 10px; align-items: center; padding: 8px 10px;
  border-bottom: 1px solid var(--line); }
header strong { margin-right: auto; }
button { font: inherit; padding: 3px 10px; border: 1px solid var(--line); border-radius: 6px; background: transparent;
  color: inherit; cursor: pointer; }
button:disabled { opacity: .4; cursor: default; }
#review { width: 100%; color: var(--review); font-weight: 600; }
#review:empty, #status:empty { display: none; }
#status { padding: 6px 10px; color: var(--muted); }
main { display: grid; grid-template-columns: 1fr; gap: 10px; padding: 10px; }
@media (min-width: 720px) { main { grid-template-columns: 3fr 2fr; } }
figure { position: relative; margin: 0; border: 1px solid var(--line); align-self: start; }
figure img { display: block; width: 100%; height: auto; }
figure svg { position: absolute; inset: 0; width: 100%; height: 100%; }
.box { fill: transparent; stroke-width: 1.5px; vector-effect: non-scaling-stroke; cursor: pointer; }
.box.high { stroke: var(--high); stroke-opacity: .55; }
.box.mid { stroke: var(--mid); stroke-opacity: .8; }
.box.low { stroke: var(--low); }
.box.review { stroke: var(--review); stroke-width: 2.5px; fill: var(--review); fill-opacity: .18; }
.box.on { stroke: var(--on); stroke-width: 3px; fill: var(--on); fill-opacity: .2; }
#side { min-width: 0; }
#info { min-height: 2.9em; padding: 6px 8px; border: 1px solid var(--line); border-radius: 6px; color: var(--muted);
  overflow-wrap: anywhere; }
#counts { color: var(--muted); margin: 6px 0; }
#text { max-height: 420px; overflow: auto; border: 1px solid var(--line); border-radius: 6px; padding: 4px 8px; }
#text p { margin: 4px 0; }
.word { cursor: pointer; border-radius: 3px; }
.word.mid { text-decoration: underline dotted var(--mid); }
.word.low { text-decoration: underline wavy var(--low); }
.word.review { background: color-mix(in srgb, var(--review) 22%, transparent); outline: 1px solid var(--review); }
.word.on { background: color-mix(in srgb, var(--on) 30%, transparent); }
`;

const BODY = `
<header>
  <strong id="pageno">OCR viewer</strong>
  <button id="prev" type="button" disabled>‹ Previous</button>
  <button id="next" type="button" disabled>Next ›</button>
  <button id="copy" type="button">Copy text</button>
  <div id="review"></div>
</header>
<div id="status" role="status">Connecting…</div>
<main>
  <figure><img id="page" alt="The page" hidden><svg id="boxes" viewBox="0 0 1 1" preserveAspectRatio="none"></svg></figure>
  <section id="side">
    <div id="info"></div>
    <div id="counts"></div>
    <div id="text" aria-label="The page's text in reading order"></div>
  </section>
</main>
`;

const sha256 = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;

/** The policy the document carries itself (hosts add their own from the resource's `_meta.ui.csp`). */
export const VIEWER_CSP = [
  "default-src 'none'",
  `script-src ${sha256(VIEWER_SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "img-src data:",
  "connect-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

/** The viewer's HTML: self-contained, nothing loaded from anywhere. */
export const VIEWER_HTML =
  `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
  `<meta http-equiv="Content-Security-Policy" content="${VIEWER_CSP}">` +
  `<meta name="viewport" content="width=device-width, initial-scale=1"><title>OCR viewer</title>` +
  `<style>${STYLE}</style></head><body>${BODY}<script>${VIEWER_SCRIPT}</script></body></html>`;
