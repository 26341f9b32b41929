// Prints the plain closing line 'N passed, N failed, N skipped' from Jest's JSON results.
const fs = require('fs');
const r = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const skipped = r.numPendingTests + r.numTodoTests;
console.log(`Tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
