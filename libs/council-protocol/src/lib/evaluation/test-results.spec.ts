import fc from 'fast-check';
import { aggregateRun } from './aggregation';
import { ReviewTestReport, executableTestResultsOf, parseReviewTestResults } from './test-results';
import { refusal } from '../../testing/council-fixtures';

const report = (
  reviewer: string,
  target: string,
  passed: number,
  failed: number,
  evidence = [`ci-${reviewer}-${target}`],
): ReviewTestReport => ({
  review_id: `${reviewer}-on-${target}`,
  reviewer_member_id: reviewer,
  target_candidate_id: target,
  test_results: { suite_ref: 'suite-1', passed, failed, evidence_refs: evidence },
});
const authors = { A: 'a', B: 'b', C: 'c' };

describe('executable test results from reviews, for test-first elimination (15.1, 15.2)', () => {
  it('given a well-formed report, when parsed, then it is kept as is', () => {
    expect(parseReviewTestResults({ suite_ref: 'ci#12', passed: 3, failed: 1, evidence_refs: ['ci-12'] }, 'test_results')).toEqual({
      suite_ref: 'ci#12',
      passed: 3,
      failed: 1,
      evidence_refs: ['ci-12'],
    });
  });

  it.each([
    [{ suite_ref: 's', passed: -1, failed: 0, evidence_refs: ['e'] }, 'test_results.passed'],
    [{ suite_ref: 's', passed: 1, failed: 0.5, evidence_refs: ['e'] }, 'test_results.failed'],
    [{ suite_ref: 's', passed: 0, failed: 0, evidence_refs: ['e'] }, 'test_results.passed'],
    [{ suite_ref: 's', passed: 1, failed: 0, evidence_refs: [] }, 'test_results.evidence_refs'],
    [{ passed: 1, failed: 0, evidence_refs: ['e'] }, 'test_results.suite_ref'],
    ['all green', 'test_results'],
    [{ suite_ref: 's', passed: 1, failed: 0, evidence_refs: ['e'], flaky: 2 }, 'test_results.flaky'],
  ])('given %j, when parsed, then it is refused at %s', (input, field) => {
    expect(refusal(() => parseReviewTestResults(input, 'test_results')).field).toBe(field);
  });

  it('given two reviewers on A, one failing, and A’s author reporting its own success, then A fails on the others’ reports alone', () => {
    const results = executableTestResultsOf(
      [report('b', 'A', 5, 0), report('c', 'A', 4, 1), report('a', 'A', 9, 0), report('a', 'B', 2, 0)],
      authors,
    );
    expect(results).toEqual([
      { candidate_id: 'A', passed: 9, failed: 1, evidence_refs: ['ci-b-A', 'ci-c-A'], review_ids: ['b-on-A', 'c-on-A'] },
      { candidate_id: 'B', passed: 2, failed: 0, evidence_refs: ['ci-a-B'], review_ids: ['a-on-B'] },
    ]);
    // Handed to the aggregation, A is eliminated and C, untested, stays.
    const review = (reviewer: string, target: string, score: number) => ({
      review_id: `r-${reviewer}-${target}`,
      reviewer_member_id: reviewer,
      target_candidate_id: target,
      rubric_scores: { overall: score },
      strengths: [],
      material_issues: [],
    });
    const r = aggregateRun(
      {
        candidate_ids: ['A', 'B', 'C'],
        reviews: [review('b', 'A', 5), review('c', 'A', 5), review('a', 'B', 3), review('a', 'C', 2), review('b', 'C', 2)],
        authors,
        seed: 'seed-1',
        test_results: results,
      },
      { method: 'test-first-elimination', then: { method: 'borda' } },
    );
    expect(r.eliminated).toEqual([
      { candidate_id: 'A', reason: 'failed 1 executable test(s) (passed 9; reported by b-on-A, c-on-A; evidence ci-b-A, ci-c-A)' },
    ]);
    expect(r.detail.method === 'test-first-elimination' && r.detail.untested).toEqual(['C']);
  });

  const arbitraryReports = fc.array(
    fc.record({
      reviewer: fc.constantFrom('a', 'b', 'c', 'd'),
      target: fc.constantFrom('A', 'B', 'C'),
      passed: fc.nat(5),
      failed: fc.nat(2),
    }),
    { maxLength: 12 },
  );

  it('property: a candidate fails exactly when a report by someone other than its author counts a failure; its own reports never count', () => {
    fc.assert(
      fc.property(arbitraryReports, (raw) => {
        const reports = raw.map((r) => report(r.reviewer, r.target, r.passed, r.failed));
        const results = executableTestResultsOf(reports, authors);
        for (const id of ['A', 'B', 'C']) {
          const others = raw.filter((r) => r.target === id && r.reviewer !== authors[id as keyof typeof authors]);
          const result = results.find((x) => x.candidate_id === id);
          expect(result === undefined).toBe(others.length === 0);
          if (result) {
            expect(result.failed > 0).toBe(others.some((r) => r.failed > 0));
            expect(result.passed).toBe(others.reduce((n, r) => n + r.passed, 0));
          }
        }
      }),
    );
  });

  it('property: the results do not depend on the order of the reports', () => {
    fc.assert(
      fc.property(arbitraryReports, fc.nat(), (raw, shift) => {
        const reports = raw.map((r) => report(r.reviewer, r.target, r.passed, r.failed));
        const k = reports.length ? shift % reports.length : 0;
        const rotated = [...reports.slice(k), ...reports.slice(0, k)].reverse();
        expect(executableTestResultsOf(rotated, authors)).toEqual(executableTestResultsOf(reports, authors));
      }),
    );
  });
});
