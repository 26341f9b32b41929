import type { ReviewArtifact } from '../review-artifact';
import { ExecutableTestResult } from './aggregation';
import { fail, join, num, record, str, strings } from '../validation';

/**
 * Executable test results as a review carries them (docs/council-conformance.md, "How executable
 * test results enter a run"): a reviewer that ran the target candidate version's tests reports
 * the counts with its review (ReviewArtifact.test_results). The review's parser and the
 * checkpoint's aggregation call the parse and the combination below.
 */
export interface ReviewTestResults {
  /** Which suite ran (a name, a version, a commit). */
  suite_ref: string;
  passed: number;
  failed: number;
  /** Where the run can be checked (a known result cites evidence, as an outcome does). */
  evidence_refs: string[];
}

const REPORT_FIELDS = ['suite_ref', 'passed', 'failed', 'evidence_refs'] as const;

/** One review's report on its target candidate version. */
export interface ReviewTestReport {
  review_id: string;
  reviewer_member_id: string;
  target_candidate_id: string;
  test_results: ReviewTestResults;
}

/** A review's `test_results`, refused with the field's path when malformed. */
export function parseReviewTestResults(input: unknown, path: string): ReviewTestResults {
  const o = record(input, path);
  // Refused by name, never dropped, as the member API's schema does for any answer.
  for (const key of Object.keys(o))
    if (!(REPORT_FIELDS as readonly string[]).includes(key)) fail(join(path, key), 'unknown field: refused, not dropped');
  const passed = num(o, 'passed', path, { min: 0, integer: true });
  const failed = num(o, 'failed', path, { min: 0, integer: true });
  if (passed + failed === 0) fail(join(path, 'passed'), 'a report counts at least one test');
  return {
    suite_ref: str(o, 'suite_ref', path),
    passed,
    failed,
    evidence_refs: strings(o, 'evidence_refs', path, { nonEmpty: true }),
  };
}

/** The reports among reviews: those that carry `test_results`. */
export function reviewTestReportsOf(reviews: readonly ReviewArtifact[]): ReviewTestReport[] {
  return reviews.flatMap((r) =>
    r.test_results
      ? [
          {
            review_id: r.review_id,
            reviewer_member_id: r.reviewer_member_id,
            target_candidate_id: r.target_candidate_id,
            test_results: r.test_results,
          },
        ]
      : [],
  );
}

/**
 * The executable test results of each candidate from the round's review reports, for test-first
 * elimination. A report on the reviewer's own candidate is left out (a claim about oneself, as a
 * self-review is). The reports on one candidate add up, so one failing report is enough to
 * eliminate it: a test failure is not outvoted. Evidence is the union of the reports'. The output
 * is ordered by candidate id and does not depend on the reports' order.
 */
export function executableTestResultsOf(
  reports: readonly ReviewTestReport[],
  authors: Readonly<Record<string, string>>,
): ExecutableTestResult[] {
  const by = new Map<string, { passed: number; failed: number; evidence: Set<string>; reviews: Set<string> }>();
  for (const r of reports) {
    if (authors[r.target_candidate_id] === r.reviewer_member_id) continue;
    const sum = by.get(r.target_candidate_id) ?? { passed: 0, failed: 0, evidence: new Set<string>(), reviews: new Set<string>() };
    sum.passed += r.test_results.passed;
    sum.failed += r.test_results.failed;
    for (const e of r.test_results.evidence_refs) sum.evidence.add(e);
    sum.reviews.add(r.review_id);
    by.set(r.target_candidate_id, sum);
  }
  return [...by.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([candidate_id, s]) => ({
      candidate_id,
      passed: s.passed,
      failed: s.failed,
      evidence_refs: [...s.evidence].sort(),
      review_ids: [...s.reviews].sort(),
    }));
}
