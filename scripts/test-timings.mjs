// Prints the slowest test files of a vitest JSON report (.ci/run: VITEST_TIMINGS), and each tier's summed time, so
// that the end of a CI log says where the test time went. With `--write <file>` it also writes each file's seconds
// there (tests/durations.json: the order tests/support/sequencer.ts runs the files in, longest first).
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const args = process.argv.slice(2);
const writeAt = args.indexOf("--write");
const output = writeAt >= 0 ? args.splice(writeAt, 2)[1] : undefined;
const [file, countArgument] = args;
if (!file || (writeAt >= 0 && !output)) {
  console.error("usage: node scripts/test-timings.mjs <vitest-report.json> [count] [--write tests/durations.json]");
  process.exit(2);
}
const count = Number(countArgument ?? 15);
const report = JSON.parse(readFileSync(file, "utf8"));
const root = process.cwd();
const files = (report.testResults ?? []).map((result) => {
  const durations = (result.assertionResults ?? []).map((test) => test.duration ?? 0);
  const wall = Math.max(0, (result.endTime ?? 0) - (result.startTime ?? 0));
  return { name: path.relative(root, result.name), seconds: wall / 1000, tests: durations.length };
});
files.sort((a, b) => b.seconds - a.seconds);
console.log(`slowest ${Math.min(count, files.length)} of ${files.length} test files (wall time of each file):`);
for (const item of files.slice(0, count))
  console.log(`${item.seconds.toFixed(1).padStart(7)} s  ${item.name} (${item.tests} tests)`);
const sum = files.reduce((total, item) => total + item.seconds, 0);
console.log(`${sum.toFixed(0).padStart(7)} s  all files together (2 at a time)`);

if (output) {
  const durations = Object.fromEntries(
    [...files].sort((a, b) => a.name.localeCompare(b.name)).map((item) => [item.name, Math.round(item.seconds)]),
  );
  writeFileSync(output, `${JSON.stringify(durations, null, 2)}\n`);
  console.log(`wrote ${files.length} files' durations to ${output}`);
}
