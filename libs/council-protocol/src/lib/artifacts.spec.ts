import fc from 'fast-check';
import { CouncilError } from './errors';
import { parseGoalContract, parseMaxTime } from './goal-contract';
import { parseMemberDescriptor, parsePanel, diversityProfile } from './member-descriptor';
import { parseCandidateArtifact } from './candidate-artifact';
import { parseReviewArtifact } from './review-artifact';
import { parseRevisionArtifact } from './revision-artifact';
import { parseConflictMap } from './conflict-map';
import { parseFrameCheck } from './frame-check';
import { parseDecisionRecord } from './decision-record';
import { parseCouncilPolicy } from './policy';
import { candidateArtifact, goalContract, member, refusal } from '../testing/council-fixtures';

const review = (o: Record<string, unknown> = {}) => ({
  review_id: 'rev-X-on-A-v1',
  reviewer_member_id: 'member-skeptic-01',
  target_candidate_id: 'cand-A-v1',
  rubric_scores: { evidence: 3, correctness: 4, executability: 2, risk_coverage: 3 },
  strengths: [],
  material_issues: [{ claim: 'no rollback', evidence_refs: [], severity: 'high', revision_request: 'add rollback' }],
  ...o,
});

const decision = (o: Record<string, unknown> = {}) => ({
  decision_id: 'decision-001',
  goal_contract_id: 'gc-001',
  selected_path: 'cand-A-v2',
  decision: 'do A',
  grounded_in: ['cand-A-v2'],
  incorporated: [],
  rejected: [{ artifact: 'cand-B-v1', reason: 'weaker evidence' }],
  unresolved_dissent: [],
  actions: ['ship A'],
  stop_loss_conditions: ['errors > 1%'],
  reversal_signals: [],
  confidence_scheme: 'ordinal-confidence-v1',
  confidence: 'high',
  decision_owner: 'human-owner',
  ...o,
});

describe('spec 8.1 GoalContract', () => {
  it('given the spec example, when parsed, then budget and lists are kept (checklist 1)', () => {
    const gc = parseGoalContract(goalContract());
    expect(gc.budget).toEqual({ max_rounds: 3, max_time: '15m', max_cost: 100, max_tokens: 1_000_000 });
    expect(gc.success_criteria).toEqual(['no billing downtime', 'auditable ledger']);
    expect(gc.constraints).toEqual(['team of four', 'one quarter']);
    expect(gc.decision_owner).toBe('human-owner');
  });
  it('given max_time as ms, ISO duration or shorthand, when parsed, then it is milliseconds', () => {
    expect(parseMaxTime(900_000)).toBe(900_000);
    expect(parseMaxTime('PT15M')).toBe(900_000);
    expect(parseMaxTime('P1DT1H')).toBe(90_000_000);
    expect(parseMaxTime('15m')).toBe(900_000);
    expect(parseMaxTime('500ms')).toBe(500);
  });
  it.each([
    [{ budget: { max_rounds: 0, max_time: '15m' } }, 'budget.max_rounds'],
    [{ budget: { max_rounds: 2, max_time: 'soon' } }, 'budget.max_time'],
    [{ success_criteria: [] }, 'success_criteria'],
    [{ risk_level: 'extreme' }, 'risk_level'],
    [{ decision_owner: '' }, 'decision_owner'],
    [{ constraints: undefined }, 'constraints'],
  ])('given %j, when parsed, then SCHEMA_VIOLATION names %s', (patch, field) => {
    const e = refusal(() => parseGoalContract({ ...goalContract(), ...patch }));
    expect(e.code).toBe('SCHEMA_VIOLATION');
    expect(e.field).toBe(field);
  });
});

describe('spec 6 member descriptor', () => {
  it('given a descriptor, when parsed, then independence_group and roles are disclosed (checklist 3)', () => {
    const d = parseMemberDescriptor(member('member-skeptic-01', 'skeptic', ['reviewer']));
    expect(d.independence_group).toBe('shared-model-a');
    expect(d.council_roles).toEqual(['reviewer']);
    expect(d.model_family).toBe('model-x');
    expect(d.role).toBe('skeptic');
    expect(d.context_scope).toBe('full');
  });
  it('given a missing independence_group or a non-token member_id, when parsed, then the field is named', () => {
    const { independence_group: _, ...noGroup } = member('m1');
    expect(refusal(() => parseMemberDescriptor(noGroup)).field).toBe('independence_group');
    expect(refusal(() => parseMemberDescriptor({ ...member('m1'), member_id: 'a.b' })).field).toBe('member_id');
    expect(refusal(() => parseMemberDescriptor({ ...member('m1'), council_roles: ['king'] })).field).toBe('council_roles[0]');
  });
  it('given a panel with a duplicate id, when parsed, then it is refused at that index', () => {
    expect(refusal(() => parsePanel([member('a'), member('a')])).field).toBe('panel[1].member_id');
  });
  it('given three roles on one model, when profiled, then the correlation is disclosed (spec 19.2)', () => {
    expect(diversityProfile([member('a'), member('b'), member('c')]).correlated).toBe(true);
  });
});

describe('spec 8.2 CandidateArtifact and section 10 required statements', () => {
  it('given a complete candidate, when parsed, then it is accepted', () => {
    expect(parseCandidateArtifact(candidateArtifact('m1')).candidate_id).toBe('cand-m1-v1');
  });
  it.each(['position', 'risks', 'reversal_signals', 'actions', 'confidence', 'assumptions'])(
    'given no %s, when parsed, then it is refused naming it',
    (field) => {
      const c = candidateArtifact('m1');
      delete c[field];
      expect(refusal(() => parseCandidateArtifact(c)).field).toBe(field);
    },
  );
  it('given no supporting evidence, when parsed, then evidence_refs is named', () => {
    expect(refusal(() => parseCandidateArtifact(candidateArtifact('m1', { claims: [], evidence_refs: [] }))).field).toBe('evidence_refs');
  });
});

describe('spec 8.3 ReviewArtifact', () => {
  it('given rubric scores and material issues, when parsed, then both are kept (checklist 5)', () => {
    const r = parseReviewArtifact(review());
    expect(r.rubric_scores).toEqual({ evidence: 3, correctness: 4, executability: 2, risk_coverage: 3 });
    expect(r.material_issues[0]).toMatchObject({ claim: 'no rollback', severity: 'high', revision_request: 'add rollback' });
  });
  it('given a ranking only, when parsed, then it is refused: reviews identify material issues (checklist 5)', () => {
    expect(refusal(() => parseReviewArtifact(review({ rubric_scores: {}, material_issues: [], ranking: ['a'] }))).field).toBe(
      'material_issues',
    );
  });
  it('given a bad severity or a negative score, when parsed, then the nested field is named', () => {
    expect(
      refusal(() => parseReviewArtifact(review({ material_issues: [{ claim: 'x', severity: 'huge', revision_request: 'y' }] }))).field,
    ).toBe('material_issues[0].severity');
    expect(refusal(() => parseReviewArtifact(review({ rubric_scores: { evidence: -1 } }))).field).toBe('rubric_scores.evidence');
  });
});

describe('spec 8.4 RevisionArtifact', () => {
  const rev = (o: Record<string, unknown> = {}) => ({
    ...candidateArtifact('m1'),
    candidate_id: 'cand-A-v2',
    version: 2,
    parent_candidate_id: 'cand-A-v1',
    responses: [
      { review_issue: 'rev-X-on-A-v1#issue-1', disposition: 'accepted', change: 'added rollback' },
      { review_issue: 'rev-Y-on-A-v1#issue-2', disposition: 'rejected', reason: 'load test shows no drift' },
    ],
    ...o,
  });
  it('given the spec example, when parsed, then the response map is kept', () => {
    expect(parseRevisionArtifact(rev()).responses).toHaveLength(2);
  });
  it('given a rejection without reason or no parent, when parsed, then it is refused naming the field', () => {
    expect(refusal(() => parseRevisionArtifact(rev({ responses: [{ review_issue: 'x#issue-1', disposition: 'rejected' }] }))).field).toBe(
      'responses[0].reason',
    );
    expect(refusal(() => parseRevisionArtifact(rev({ parent_candidate_id: null }))).field).toBe('parent_candidate_id');
  });
});

describe('spec 8.5 ConflictMap', () => {
  const map = (c: Record<string, unknown>) => ({
    conflict_map_id: 'cm-1',
    conflicts: [{ conflict_id: 'conflict-01', positions: ['a'], description: 'd', decision_impact: 'high', status: 'unresolved', ...c }],
  });
  it.each(['fact', 'causal-model', 'information-set', 'risk-preference', 'time-horizon', 'resource-constraint', 'goal/frame'])(
    'given a %s conflict with discriminating evidence, when parsed, then it is accepted (checklist 7)',
    (type) => {
      expect(parseConflictMap(map({ type, discriminating_evidence: 'replay' })).conflicts[0].type).toBe(type);
    },
  );
  it('given a value conflict, when parsed, then it needs a value owner or evidence (checklist 7)', () => {
    expect(parseConflictMap(map({ type: 'value', value_owner: 'human-owner' })).conflicts[0].value_owner).toBe('human-owner');
    expect(refusal(() => parseConflictMap(map({ type: 'value' }))).field).toBe('conflicts[0].value_owner');
  });
  it('given an unclassified conflict or one without discriminating evidence, when parsed, then it is refused', () => {
    expect(refusal(() => parseConflictMap(map({ type: 'vibes', discriminating_evidence: 'x' }))).field).toBe('conflicts[0].type');
    expect(refusal(() => parseConflictMap(map({ type: 'fact' }))).field).toBe('conflicts[0].discriminating_evidence');
  });
});

describe('spec 13 frame check', () => {
  const challenge = {
    frame_check_id: 'fc-1',
    observer_member_id: 'member-outsider-01',
    result: 'frame-challenge',
    assumed_frame: 'billing is an engineering question',
    excluded: { kind: 'stakeholder', description: 'finance auditors' },
    evidence_refs: ['ev-audit-letter'],
    reversal_signal: 'auditors accept the current ledger',
    re_entry_action: 'add auditability to success criteria',
  };
  it('given frame-holds or a sourced frame-challenge, when parsed, then both are accepted (checklist 8)', () => {
    expect(parseFrameCheck({ frame_check_id: 'fc-0', observer_member_id: 'o', result: 'frame-holds' }).result).toBe('frame-holds');
    expect(parseFrameCheck(challenge).result).toBe('frame-challenge');
  });
  it.each(['assumed_frame', 'reversal_signal', 're_entry_action'])(
    'given a challenge without %s, when parsed, then it is refused',
    (field) => {
      const c: Record<string, unknown> = { ...challenge };
      delete c[field];
      expect(refusal(() => parseFrameCheck(c)).field).toBe(field);
    },
  );
  it('given a challenge with neither evidence nor inference, when parsed, then it is refused as unsourced', () => {
    expect(refusal(() => parseFrameCheck({ ...challenge, evidence_refs: [] })).field).toBe('evidence_refs');
    expect(parseFrameCheck({ ...challenge, evidence_refs: [], inference: 'regulation applies' }).result).toBe('frame-challenge');
  });
});

describe('spec 8.6 DecisionRecord', () => {
  it('given the spec fields, when parsed, then decision, dissent, actions and reversal are kept (checklist 15)', () => {
    const d = parseDecisionRecord(decision({ unresolved_dissent: ['conflict-01 remains'] }));
    expect(d.decision).toBe('do A');
    expect(d.actions).toEqual(['ship A']);
    expect(d.unresolved_dissent).toEqual(['conflict-01 remains']);
    expect(d.stop_loss_conditions).toEqual(['errors > 1%']);
    const withReversal = parseDecisionRecord(decision({ stop_loss_conditions: [], reversal_signals: ['errors rise'] }));
    expect(withReversal.reversal_signals).toEqual(['errors rise']);
  });
  it('given a decision without actions or without reversal/stop-loss, when parsed, then it is refused (checklist 15)', () => {
    expect(refusal(() => parseDecisionRecord(decision({ actions: [] }))).field).toBe('actions');
    expect(refusal(() => parseDecisionRecord(decision({ stop_loss_conditions: [], reversal_signals: [] }))).field).toBe('reversal_signals');
  });
  it('given no-decision, when parsed, then actions may be empty', () => {
    expect(parseDecisionRecord(decision({ selected_path: 'no-decision', actions: [], stop_loss_conditions: [] })).selected_path).toBe(
      'no-decision',
    );
  });
  it('given unlabelled speculation, when parsed, then it is refused (spec 14)', () => {
    expect(refusal(() => parseDecisionRecord(decision({ speculation: [{ claim: 'rates fall' }] }))).field).toBe('speculation[0].label');
  });
});

describe('policy', () => {
  it('given nothing, when parsed, then defaults apply; given L4 without an aggregation, then it is refused at policy.aggregation', () => {
    expect(parseCouncilPolicy(undefined).level).toBe('council:L3');
    expect(refusal(() => parseCouncilPolicy({ level: 'council:L4' })).field).toBe('policy.aggregation');
    expect(refusal(() => parseCouncilPolicy({ stage_timeouts_ms: { lunch: 5 } })).field).toBe('policy.stage_timeouts_ms.lunch');
  });
});

describe('spec 8 validation accepts unknown input and always ends in a typed error', () => {
  const parsers = [
    parseGoalContract,
    parseMemberDescriptor,
    parseCandidateArtifact,
    parseReviewArtifact,
    parseRevisionArtifact,
    parseConflictMap,
    parseFrameCheck,
    parseDecisionRecord,
  ];
  it('property: any JSON value either parses or throws CouncilError SCHEMA_VIOLATION', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.anything(),
          fc.record({ candidate_id: fc.anything(), review_id: fc.anything(), conflicts: fc.anything(), result: fc.anything() }),
        ),
        (value) => {
          for (const parse of parsers) {
            try {
              parse(value as never);
            } catch (e) {
              if (!(e instanceof CouncilError) || e.code !== 'SCHEMA_VIOLATION') return false;
            }
          }
          return true;
        },
      ),
    );
  });
});
