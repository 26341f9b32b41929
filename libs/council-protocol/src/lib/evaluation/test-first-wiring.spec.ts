import fc from 'fast-check';
import { COUNCIL_EVENT_TYPES as E } from '../contracts';
import { CouncilTaskRequest } from '../controller';
import { ChairDecisionRecorded, CheckpointRecorded, ReviewSubmitted } from '../events';
import { validateAnswerContent } from '../member-answers';
import { memberApiSchemas } from '../member-schemas';
import { buildRunRecord } from '../run-record';
import { CouncilRunState, StartedRun, foldRun } from '../state';
import { Behaviour, decisionFor, defaultBehaviour, drive, goalContract, startCommand, refusal } from '../../testing/council-fixtures';
import { ReviewTestResults } from './test-results';

/**
 * Test-first elimination in a run (15.1, 15.2): reviewers report the executable tests they ran
 * on a candidate version (ReviewArtifact.test_results), the checkpoint's aggregation eliminates
 * a candidate that failed before ranking, the chair may not select it, and the records say why.
 */

const goal = goalContract({ domain: 'payments.migrations' });
const policy = { level: 'council:L4', aggregation: { method: 'test-first-elimination', then: 'borda' } };
/** Reviewers score candidate A highest, then C, then B (by blind letter): without tests, A wins. */
const byLetter: Record<string, number> = { A: 5, B: 2, C: 4 };
const letterOf = (ref: string) => /^anon-([A-Z]+)-/.exec(ref)?.[1] ?? '?';
const failing = (ref: string): ReviewTestResults => ({ suite_ref: 'ledger-suite@1', passed: 4, failed: 1, evidence_refs: [`ci-${ref}`] });
const passing = (ref: string): ReviewTestResults => ({ suite_ref: 'ledger-suite@1', passed: 5, failed: 0, evidence_refs: [`ci-${ref}`] });

/** A chair that selects what the checkpoint's aggregation selected, and decides no-decision when it selected nothing. */
function followsAggregation(req: CouncilTaskRequest): Record<string, unknown> {
  const selected = (req.inputs['aggregation'] as { selected: string | null } | null)?.selected ?? null;
  if (selected) return decisionFor(req, { selected_path: selected, grounded_in: [selected] });
  const { chair_mode: _mode, ...rest } = decisionFor(req, { selected_path: 'no-decision', grounded_in: [] });
  return rest;
}

/** Default members whose reviews carry `report(candidate_ref)` when it gives one. */
function reporting(
  report: (ref: string) => unknown,
  opts: { score?: (ref: string) => number; decision?: (req: CouncilTaskRequest) => Record<string, unknown> } = {},
): Behaviour {
  const base = defaultBehaviour({
    score: opts.score ?? ((ref) => byLetter[letterOf(ref)] ?? 3),
    decision: opts.decision ?? followsAggregation,
  });
  return (req, memberId, state) => {
    const reply = base(req, memberId, state);
    if (req.stage !== 'review' || reply.kind !== 'reply') return reply;
    const reviews = (reply.artifact as Record<string, unknown>[]).map((r) => {
      const t = report(String(r['target_candidate_id']));
      return t === undefined ? r : { ...r, test_results: t };
    });
    return { ...reply, artifact: reviews };
  };
}

const run = (behaviour: Behaviour, seed = 'seed-1') => drive(startCommand({ goal, policy, seed }), behaviour);
const started = (s: CouncilRunState) => s as StartedRun;
const lineage = (s: CouncilRunState, letter: string): string =>
  Object.values(started(s).lineages).find((l) => l.letter === letter)?.versions[0] as string;
const ofType = <T extends { type: string }>(events: { type: string }[], type: string) => events.filter((e): e is T => e.type === type);
const checkpoints = (events: { type: string }[]) => ofType<CheckpointRecorded>(events, E.CheckpointRecorded).map((e) => e.data.checkpoint);
const decisions = (events: { type: string }[]) =>
  ofType<ChairDecisionRecorded>(events, E.ChairDecisionRecorded).map((e) => e.data.decision_record);

describe('test-first elimination in a run: test results on reviews (15.1, 15.2, 15 MUST)', () => {
  it('given a review answer with test_results, when validated against the served schema, then it is accepted; an unknown field or no test at all is refused by name', () => {
    const review = (test_results: unknown) => [
      { target_candidate_id: 'anon-A-v1', rubric_scores: { evidence: 4 }, material_issues: [], test_results },
    ];
    expect(() => validateAnswerContent('review', review(failing('anon-A-v1')))).not.toThrow();
    const unknown = refusal(() => validateAnswerContent('review', review({ ...failing('x'), flaky: 2 })));
    expect(unknown.toJSON()).toMatchObject({ code: 'SCHEMA_VIOLATION', field: 'reviews[0].test_results.flaky' });
    const none = refusal(() => validateAnswerContent('review', review({ ...failing('x'), passed: 0, failed: 0 })));
    expect(none.toJSON()).toMatchObject({ code: 'SCHEMA_VIOLATION', field: 'reviews[0].test_results.passed' });
    expect(memberApiSchemas().answers.review.properties.reviews.items.properties.test_results.required).toEqual([
      'suite_ref',
      'passed',
      'failed',
      'evidence_refs',
    ]);
  });

  it('given reviewers reporting test results, when their reviews are submitted, then ReviewSubmitted stores them as sent', () => {
    const d = run(reporting((ref) => (letterOf(ref) === 'A' ? failing(ref) : passing(ref))));
    const reviews = ofType<ReviewSubmitted>(d.events, E.ReviewSubmitted).flatMap((e) => e.data.reviews);
    const a = lineage(d.state, 'A');
    expect(reviews.length).toBeGreaterThan(0);
    for (const r of reviews) {
      const ref = String(r.test_results?.evidence_refs[0]).replace(/^ci-/, '');
      expect(r.test_results).toEqual(r.target_candidate_id === a ? failing('anon-A-v1') : passing(ref));
      expect(ref).toMatch(/^anon-[BC]-v1$|^anon-A-v1$/);
    }
  });

  it('given a review whose test_results count a negative failure, when submitted, then it is refused at reviews[0].test_results.failed', () => {
    const d = run(reporting(() => ({ suite_ref: 's', passed: 1, failed: -1, evidence_refs: ['e'] })));
    expect(d.refusals[0]?.error.toJSON()).toMatchObject({ code: 'SCHEMA_VIOLATION', field: 'reviews[0].test_results.failed' });
  });

  it('given reviewers reporting that Candidate A fails a test, when the run is driven, then A is eliminated before ranking, C is selected and decided, and the records say why', () => {
    // The chair also grounds its choice in the test evidence a review cited.
    const chairCitingTests = (req: CouncilTaskRequest) => {
      const base = followsAggregation(req);
      return { ...base, grounded_in: [...(base['grounded_in'] as string[]), `ci-${String(base['selected_path'])}`] };
    };
    const d = run(reporting((ref) => (letterOf(ref) === 'A' ? failing(ref) : passing(ref)), { decision: chairCitingTests }));
    expect(d.state.status).toBe('terminated');
    const [a, c] = [lineage(d.state, 'A'), lineage(d.state, 'C')];
    const [cp] = checkpoints(d.events);
    const reviewsOfA = ofType<ReviewSubmitted>(d.events, E.ReviewSubmitted)
      .flatMap((e) => e.data.reviews)
      .filter((r) => r.target_candidate_id === a)
      .map((r) => r.review_id)
      .sort();
    expect(reviewsOfA).toHaveLength(2);
    const reason = `failed 2 executable test(s) (passed 8; reported by ${reviewsOfA.join(', ')}; evidence ci-anon-A-v1)`;
    expect(cp.aggregation?.eliminated).toEqual([{ candidate_id: a, reason }]);
    expect(cp.aggregation?.explanation.signals[0]).toBe('executable-tests');
    expect(cp.aggregation?.selected).toBe(c);
    expect(cp.score).toBe(cp.scores[c]);

    // The chair sees the elimination by blind refs only.
    const synthesis = d.requests.find((r) => r.stage === 'synthesis');
    const agg = synthesis?.inputs['aggregation'] as { eliminated: { candidate_id: string; reason: string }[]; selected: string };
    expect(agg.eliminated[0].candidate_id).toBe('anon-A-v1');
    expect(agg.eliminated[0].reason).toMatch(/reported by review-\d+, review-\d+;/);
    expect(agg.selected).toBe('anon-C-v1');
    const blindReviews = synthesis?.inputs['reviews'] as { target_ref: string; test_results?: ReviewTestResults }[];
    expect(blindReviews.filter((r) => r.target_ref === 'anon-A-v1').map((r) => r.test_results)).toEqual([
      failing('anon-A-v1'),
      failing('anon-A-v1'),
    ]);

    // The DecisionRecord does not choose A and says why; the RunRecord keeps the checkpoint's explanation.
    const [record] = decisions(d.events);
    expect(record.selected_path).toBe(c);
    expect(record.grounded_in).toContain('ci-anon-C-v1');
    expect(record.rejected).toContainEqual({ artifact: a, reason: `eliminated by executable tests: ${reason}` });
    const runRecord = buildRunRecord(started(d.state));
    expect(runRecord.checkpoints[0].aggregation?.eliminated).toEqual([{ candidate_id: a, reason }]);
    expect(runRecord.decision_record?.rejected).toContainEqual({ artifact: a, reason: `eliminated by executable tests: ${reason}` });
    // A rebuild from the log gives the same record.
    expect(buildRunRecord(started(foldRun(d.events)))).toEqual(runRecord);
  });

  it('given a chair that selects the candidate its tests eliminated, when it answers, then ELIMINATED_BY_TESTS names selected_path and no decision selects it', () => {
    const d = run(
      reporting((ref) => (letterOf(ref) === 'A' ? failing(ref) : undefined), {
        decision: (req) => decisionFor(req, { selected_path: 'anon-A-v1', grounded_in: ['anon-A-v1'] }),
      }),
    );
    const refused = d.refusals.find((r) => r.req.stage === 'synthesis');
    expect(refused?.error.toJSON()).toMatchObject({ code: 'ELIMINATED_BY_TESTS', field: 'selected_path' });
    expect(decisions(d.events).every((r) => r.selected_path !== lineage(d.state, 'A'))).toBe(true);
  });

  it('given every candidate fails its tests, when driven, then nothing is selected, the checkpoint has no score, the explanation says so and the chair abstains', () => {
    const d = run(reporting((ref) => failing(ref)));
    const [cp] = checkpoints(d.events);
    expect(cp.aggregation?.eliminated.map((e) => e.candidate_id).sort()).toEqual([...cp.candidate_ids].sort());
    expect(cp.aggregation?.selected).toBeNull();
    expect(cp.aggregation?.explanation.steps).toContain('no candidate passes: nothing to rank (insufficient evidence, not a tie)');
    expect(cp.score).toBeNull();
    expect(d.state.status === 'terminated' && d.state.terminal.terminal_state).toBe('abstained-insufficient-evidence');
    expect(
      decisions(d.events)[0]
        .rejected.map((r) => r.artifact)
        .sort(),
    ).toEqual([...cp.candidate_ids].sort());
  });

  it('given nobody reports test results, when driven, then nothing is eliminated and the ranking decides as without the method', () => {
    const d = run(reporting(() => undefined));
    const [cp] = checkpoints(d.events);
    expect(cp.aggregation?.eliminated).toEqual([]);
    expect(cp.aggregation?.selected).toBe(lineage(d.state, 'A'));
    expect(cp.aggregation?.explanation.steps[0]).toBe('no executable test results: nothing eliminated');
  });

  it('property: a candidate failing a test is never the checkpoint’s winner or the decision while one passing or untested exists; when all fail, nothing is selected and the run abstains', () => {
    const status = fc.constantFrom('pass', 'fail', 'none');
    fc.assert(
      fc.property(
        fc.record({ A: status, B: status, C: status }),
        fc.record({ A: fc.integer({ min: 1, max: 5 }), B: fc.integer({ min: 1, max: 5 }), C: fc.integer({ min: 1, max: 5 }) }),
        fc.string({ minLength: 1, maxLength: 6 }),
        (tests, scores, seed) => {
          const of = (ref: string) => letterOf(ref) as 'A' | 'B' | 'C';
          const d = run(
            reporting((ref) => (tests[of(ref)] === 'fail' ? failing(ref) : tests[of(ref)] === 'pass' ? passing(ref) : undefined), {
              score: (ref) => scores[of(ref)],
            }),
            seed,
          );
          const [cp] = checkpoints(d.events);
          const failed = (['A', 'B', 'C'] as const).filter((l) => tests[l] === 'fail').map((l) => lineage(d.state, l));
          expect(cp.aggregation?.eliminated.map((e) => e.candidate_id).sort()).toEqual([...failed].sort());
          const [record] = decisions(d.events);
          if (failed.length < 3) {
            expect(failed).not.toContain(cp.aggregation?.selected);
            expect(cp.aggregation?.selected).not.toBeNull();
            expect(failed).not.toContain(record.selected_path);
          } else {
            expect(cp.aggregation?.selected).toBeNull();
            expect(cp.score).toBeNull();
            expect(record.selected_path).toBe('no-decision');
          }
          for (const id of failed) expect(record.rejected.map((r) => r.artifact)).toContain(id);
        },
      ),
      { numRuns: 40 },
    );
  });
});
