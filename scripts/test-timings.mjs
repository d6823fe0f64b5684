// Prints the slowest test files of a vitest JSON report (.ci/run: VITEST_TIMINGS), and each tier's summed time, so
// that the end of a CI log says where the test time went.
import { readFileSync } from "node:fs";
import path from "node:path";

const file = process.argv[2];
if (!file) {
  console.error("usage: node scripts/test-timings.mjs <vitest-report.json> [count]");
  process.exit(2);
}
const count = Number(process.argv[3] ?? 15);
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
