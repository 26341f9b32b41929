// Prints the plain closing line 'N passed, N failed, N skipped' from one or more Jest JSON results.
const fs = require('fs');
let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of process.argv.slice(2)) {
  if (!fs.existsSync(file)) continue;
  const r = JSON.parse(fs.readFileSync(file, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests + (r.numRuntimeErrorTestSuites ?? 0);
  skipped += r.numPendingTests + r.numTodoTests;
}
console.log(`Tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
