// The Node check of `npm install` (preinstall), `npm run dev`, `npm start`, `npm test` and `npm run build`: on an older
// Node the service starts and reads images, but every PDF fails inside pdf.js (which needs 22.13), and vitest 5 / msw 3
// refuse to load. So stop at once, saying which Node this is and how to get Node 24. CommonJS and old syntax on
// purpose: it must run on any Node. npm runs a project's own preinstall after it has installed the packages, so on an
// old Node `npm install` ends with this message rather than starts with it.
// OCR_CHECK_NODE_VERSION stands in for the running version (tests/setup/check-node.test.ts).
"use strict";
var REQUIRED = [22, 13];
var version = process.env.OCR_CHECK_NODE_VERSION || process.versions.node;
var parts = version.replace(/^v/, "").split(".").map(Number);
var tooOld = parts[0] < REQUIRED[0] || (parts[0] === REQUIRED[0] && parts[1] < REQUIRED[1]);
if (tooOld) {
  process.stderr.write(
    "\n" +
      "This project needs Node.js " +
      REQUIRED.join(".") +
      " or newer (Node 24 recommended); this is Node.js " +
      version +
      " (" +
      process.execPath +
      ").\n" +
      "Node 24 installs from the npm registry, with nothing else:\n\n" +
      '    npm install -g --prefix "$HOME/.local/node24" node@24 && export PATH="$HOME/.local/node24/bin:$PATH"\n\n' +
      "Then run the command again (and `npm install` first if it ran on the old Node).\n\n",
  );
  process.exit(1);
}
