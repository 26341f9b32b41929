import { memberFixture, runRecordFixture } from './evaluation-fixtures';
import { OutcomeContext, StructuredOutcome, outcomeValue, parseStructuredOutcome, standingOutcome, unknownOutcome } from './outcomes';
import { refusal } from '../../testing/council-fixtures';

const record = runRecordFixture({
  run_id: 'r1',
  at: '2025-01-10T10:00:00Z',
  members: [memberFixture('ann'), memberFixture('bob', 'model-b')],
  candidates: [
    { id: 'r1-A', author: 'ann', expected_outcomes: ['p95 latency under 200 ms'] },
    { id: 'r1-B', author: 'bob' },
  ],
  chair: 'bob',
  selected: 'r1-A',
});
const decision = record.decision_record as NonNullable<typeof record.decision_record>;
const context: OutcomeContext = { decision, expected_outcomes: ['p95 latency under 200 ms'], evaluators: ['eval-1'] };

const valid = (over: Record<string, unknown> = {}) => ({
  outcome_id: 'o1',
  decision_id: decision.decision_id,
  observed_at: '2025-02-10T10:00:00Z',
  recorded_by: 'owner-1',
  source_kind: 'operational-observation',
  verdict: 'success',
  actions: [{ action: 'ship it', status: 'done' }],
  expected_outcomes: [{ expected: 'p95 latency under 200 ms', observed: 'met' }],
  reversal_signals: [{ signal: 'users revert', fired: false }],
  stop_loss_conditions: [{ condition: 'error rate above 2%', triggered: 'unknown' }],
  summary: 'latency met after rollout',
  evidence_refs: ['dashboard-42'],
  ...over,
});

describe('council:L5 structured outcome linked to its DecisionRecord (8.7, 15.4)', () => {
  it("given the decision owner's outcome over the decision's actions, signals and stop-loss, when parsed, then every link and the explicit unknown are kept", () => {
    const o = parseStructuredOutcome(valid(), context);
    expect(o).toMatchObject({ decision_id: 'r1:decision', recorder_role: 'decision-owner', verdict: 'success' });
    expect(o.source_kind).toBe('operational-observation');
    expect(o.actions).toEqual([{ action: 'ship it', status: 'done' }]);
    expect(o.expected_outcomes).toEqual([{ expected: 'p95 latency under 200 ms', observed: 'met' }]);
    expect(o.reversal_signals).toEqual([{ signal: 'users revert', fired: false }]);
    expect(o.stop_loss_conditions).toEqual([{ condition: 'error rate above 2%', triggered: 'unknown' }]);
    expect(outcomeValue(o)).toBe(1);
  });

  it('given an authorised evaluator, when it records, then its role is evaluator; given anyone else, NOT_AUTHORIZED_ROLE', () => {
    expect(parseStructuredOutcome(valid({ recorded_by: 'eval-1' }), context).recorder_role).toBe('evaluator');
    expect(refusal(() => parseStructuredOutcome(valid({ recorded_by: 'ann' }), context))).toMatchObject({
      code: 'NOT_AUTHORIZED_ROLE',
      field: 'recorded_by',
    });
  });

  it.each([
    [{ decision_id: 'other' }, 'UNKNOWN_REFERENCE', 'outcome.decision_id'],
    [{ actions: [{ action: 'reboot the fleet', status: 'done' }] }, 'UNKNOWN_REFERENCE', 'outcome.actions[0].action'],
    [{ reversal_signals: [{ signal: 'made up', fired: true }] }, 'UNKNOWN_REFERENCE', 'outcome.reversal_signals[0].signal'],
    [{ expected_outcomes: [{ expected: 'world peace', observed: 'met' }] }, 'UNKNOWN_REFERENCE', 'outcome.expected_outcomes[0].expected'],
    [
      { stop_loss_conditions: [{ condition: 'error rate above 2%', triggered: 'maybe' }] },
      'SCHEMA_VIOLATION',
      'outcome.stop_loss_conditions[0].triggered',
    ],
    [{ source_kind: 'unknown' }, 'SCHEMA_VIOLATION', 'outcome.verdict'],
    [{ evidence_refs: [] }, 'SCHEMA_VIOLATION', 'outcome.evidence_refs'],
    [{ stop_loss_conditions: [{ condition: 'error rate above 2%', triggered: true }] }, 'SCHEMA_VIOLATION', 'outcome.verdict'],
    [{ reversal_signals: [{ signal: 'users revert', fired: true }] }, 'SCHEMA_VIOLATION', 'outcome.verdict'],
    [{ source_kind: 'peer-consensus' }, 'SCHEMA_VIOLATION', 'outcome.source_kind'],
    [
      {
        actions: [
          { action: 'ship it', status: 'done' },
          { action: 'ship it', status: 'done' },
        ],
      },
      'SCHEMA_VIOLATION',
      'outcome.actions[1].action',
    ],
  ])('given %j, when parsed, then %s at %s', (over, code, field) => {
    expect(refusal(() => parseStructuredOutcome(valid(over), context))).toMatchObject({ code, field });
  });

  it('given a fired reversal signal, when the verdict is failure, then it is accepted: the signal explains the failure', () => {
    expect(
      parseStructuredOutcome(valid({ verdict: 'failure', reversal_signals: [{ signal: 'users revert', fired: true }] }), context).verdict,
    ).toBe('failure');
  });

  it('given no evaluator can tell (18), when the explicit unknown is built, then every link is unknown, it scores nothing, and it parses back', () => {
    const o = unknownOutcome(
      { outcome_id: 'o2', observed_at: '2025-02-11T00:00:00Z', recorded_by: 'eval-1', reason: 'evaluator unavailable' },
      context,
    );
    expect(o).toMatchObject({ source_kind: 'unknown', verdict: 'unknown', evidence_refs: [] });
    expect(o.actions).toEqual([{ action: 'ship it', status: 'unknown' }]);
    expect(o.reversal_signals).toEqual([{ signal: 'users revert', fired: 'unknown' }]);
    expect(outcomeValue(o)).toBeNull();
    expect(parseStructuredOutcome(JSON.parse(JSON.stringify(o)), context)).toEqual(o);
  });

  it('given a success, a later failure and a still later unknown, when the standing outcome is asked, then the latest known verdict stands', () => {
    const at = (id: string, observed_at: string, verdict: StructuredOutcome['verdict']) =>
      verdict === 'unknown'
        ? unknownOutcome({ outcome_id: id, observed_at, recorded_by: 'eval-1', reason: 'n/a' }, context)
        : parseStructuredOutcome(valid({ outcome_id: id, observed_at, verdict, reversal_signals: [] }), context);
    const outcomes = [
      at('o3', '2025-04-01T00:00:00Z', 'unknown'),
      at('o2', '2025-03-01T00:00:00Z', 'failure'),
      at('o1', '2025-02-01T00:00:00Z', 'success'),
    ];
    expect(standingOutcome(outcomes, decision.decision_id)?.outcome_id).toBe('o2');
    expect(standingOutcome([outcomes[0]], decision.decision_id)).toBeNull();
  });
});
