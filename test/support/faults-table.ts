/**
 * Prints the table of `npm run test:faults` from the rows the fault scenarios wrote: one line a
 * scenario, then the violations of each invariant per scenario.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FAULTS_REPORT_DIR, FaultResult } from './faults';

type Row = Omit<FaultResult, 'report'>;

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

let files: string[] = [];
try {
  files = readdirSync(FAULTS_REPORT_DIR).filter((f) => f.endsWith('.json'));
} catch {
  // no scenario wrote a row
}
const rows = files.map((f) => JSON.parse(readFileSync(join(FAULTS_REPORT_DIR, f), 'utf8')) as Row);
if (rows.length === 0) {
  console.log('no fault scenario results (did the scenarios run?)');
} else {
  const total = (r: Row) => Object.values(r.violations).reduce((a, b) => a + b, 0);
  console.log(
    '\n' +
      table(
        ['scenario', 'proposals', 'accepted', 'undecided', 'kills', 'restarts', 'violations', 'max decision delay', 'down', 'duration'],
        rows.map((r) => [
          r.scenario,
          String(r.proposals),
          String(r.accepted),
          String(r.undecided.length),
          String(r.kills),
          String(r.restarts),
          String(total(r)),
          `${(r.maxDecisionDelayMs / 1000).toFixed(1)} s`,
          r.down.join(' ') || '-',
          `${(r.durationMs / 1000).toFixed(0)} s`,
        ]),
      ),
  );
  const invariants = Object.keys(rows[0].violations);
  console.log(
    '\nviolations per invariant\n' +
      table(
        ['invariant', ...rows.map((r) => r.scenario)],
        invariants.map((name) => [name, ...rows.map((r) => String(r.violations[name as keyof Row['violations']] ?? '?'))]),
      ),
  );
  const sum = (f: (r: Row) => number) => rows.reduce((a, r) => a + f(r), 0);
  console.log(
    `\ntotal: ${sum((r) => r.proposals)} proposals, ${sum((r) => r.kills)} kills, ${sum((r) => r.restarts)} restarts, ${sum(total)} violations\n`,
  );
}
