import { validateRunRecord } from './single-agent-council';
import { candidateArtifact, goalContract, member } from '../testing/council-fixtures';
import { bordaCount, paretoFrontier } from './run-aggregation';

/** A RunRecord written by one agent in separated phases, with no Council service (spec 19.1). */
export function manualRunRecord(): Record<string, unknown> {
  const agent = member('solo-agent', 'generalist');
  // The critic phase is the same agent under another role contract, disclosed as such (19.1).
  const critic = member('solo-agent-critic-phase', 'critic', ['reviewer']);
  const a = candidateArtifact('solo-agent', { candidate_id: 'cand-A-v1', position: 'Two-phase migration' });
  const b = candidateArtifact('solo-agent', { candidate_id: 'cand-B-v1', position: 'Defer migration one quarter' });
  const a2 = {
    ...a,
    candidate_id: 'cand-A-v2',
    version: 2,
    parent_candidate_id: 'cand-A-v1',
    position: 'Two-phase migration with a rehearsed rollback',
    responses: [{ review_issue: 'rev-on-A-v1#issue-1', disposition: 'accepted', change: 'added rollback rehearsal' }],
  };
  return {
    run_record_id: 'manual-1:run-record',
    run_id: 'manual-1',
    protocol: 'council',
    protocol_version: '0.1.0',
    level: 'council:L2',
    participants: [agent, critic],
    independence_groups: { 'shared-model-a': ['solo-agent', 'solo-agent-critic-phase'] },
    goal_contract_revisions: [
      {
        goal_contract: goalContract(),
        revised_at: '2026-08-03T10:00:00Z',
        revised_by: 'human-owner',
        frame_check_id: null,
        comparable: true,
        restarted: false,
      },
    ],
    artifacts: {
      candidates: [a, b, a2],
      reviews: [
        {
          review_id: 'rev-on-A-v1',
          reviewer_member_id: 'solo-agent-critic-phase',
          target_candidate_id: 'cand-A-v1',
          rubric_scores: { evidence: 3 },
          strengths: [],
          material_issues: [{ claim: 'no rollback', evidence_refs: [], severity: 'high', revision_request: 'add rollback' }],
        },
      ],
      conflict_maps: [
        {
          conflict_map_id: 'cm-1',
          conflicts: [
            {
              conflict_id: 'conflict-01',
              type: 'time-horizon',
              positions: ['cand-A-v2', 'cand-B-v1'],
              description: 'now vs next quarter',
              discriminating_evidence: 'Q4 load forecast',
              decision_impact: 'high',
              status: 'unresolved',
            },
          ],
        },
      ],
      frame_checks: [],
    },
    anonymization: {
      restricted: true,
      mapping: [
        { label: 'Candidate A', letter: 'A', lineage_id: 'cand-A-v1', author_member_id: 'solo-agent' },
        { label: 'Candidate B', letter: 'B', lineage_id: 'cand-B-v1', author_member_id: 'solo-agent' },
      ],
    },
    tasks: [
      {
        task_id: 'p1',
        member_id: 'solo-agent',
        round: 1,
        stage: 'proposal',
        candidate_id: 'cand-A-v1',
        inputs: { goal_contract: goalContract() },
      },
      {
        task_id: 'p2',
        member_id: 'solo-agent',
        round: 1,
        stage: 'proposal',
        candidate_id: 'cand-B-v1',
        inputs: { goal_contract: goalContract(), stance: 'reset: argue from operations' },
      },
      {
        task_id: 'r1',
        member_id: 'solo-agent',
        round: 1,
        stage: 'review',
        inputs: { candidates: [{ candidate_ref: 'anon-A-v1', position: 'Two-phase migration' }] },
      },
    ],
    revision_requests: [
      {
        round: 2,
        requests: [{ target_candidate_id: 'cand-A-v1', author_member_id: 'solo-agent', issues: [{ issue_id: 'rev-on-A-v1#issue-1' }] }],
      },
    ],
    decision_record: {
      decision_id: 'decision-001',
      goal_contract_id: 'gc-001',
      selected_path: 'cand-A-v2',
      chair_mode: 'select',
      decision: 'Migrate in two phases with a rehearsed rollback',
      grounded_in: ['cand-A-v2', 'rev-on-A-v1#issue-1'],
      incorporated: [],
      rejected: [{ artifact: 'cand-B-v1', reason: 'deferral leaves the incident cause open' }],
      unresolved_dissent: [{ description: 'time horizon remains contested', refs: ['conflict-01'] }],
      actions: ['rehearse rollback'],
      stop_loss_conditions: ['reconciliation errors above 0.1%'],
      reversal_signals: [],
      confidence_scheme: 'ordinal-confidence-v1',
      confidence: 'medium',
      decision_owner: 'human-owner',
    },
    terminal: { terminal_state: 'decided-with-dissent', reason: 'decision-recorded', at: '2026-08-03T10:20:00Z' },
    outcomes: [],
  };
}

const codes = (rec: unknown) => validateRunRecord(rec).problems.map((p) => `${p.code} ${p.path}`);

describe('spec 19.1 single-agent manual Council: validateRunRecord offline (checklist 16)', () => {
  it('given a RunRecord written by one agent in separated phases, when validated, then it is valid with counts', () => {
    const report = validateRunRecord(manualRunRecord());
    expect(report.problems).toEqual([]);
    expect(report).toMatchObject({
      valid: true,
      level: 'council:L2',
      terminal_state: 'decided-with-dissent',
      counts: { candidates: 2, revisions: 1, reviews: 1, conflict_maps: 1 },
    });
  });
  it('given the record as a JSON string, when validated, then it is parsed; given garbage, then a problem, never a throw', () => {
    expect(validateRunRecord(JSON.stringify(manualRunRecord())).valid).toBe(true);
    expect(validateRunRecord('{nope').problems[0].code).toBe('SCHEMA_VIOLATION');
    expect(validateRunRecord(42).valid).toBe(false);
    expect(validateRunRecord({}).problems.length).toBeGreaterThan(3);
  });
  it('given a revision whose parent is missing, when validated, then LINEAGE_MISMATCH at its path', () => {
    const rec = manualRunRecord();
    (rec['artifacts'] as { candidates: Record<string, unknown>[] }).candidates[2]['parent_candidate_id'] = 'cand-Z-v1';
    expect(codes(rec)).toContain('LINEAGE_MISMATCH artifacts.candidates[2].parent_candidate_id');
  });
  it('given a proposal phase whose inputs quote the other candidate, when validated, then INDEPENDENCE_VIOLATION', () => {
    const rec = manualRunRecord();
    (rec['tasks'] as Record<string, unknown>[])[1]['inputs'] = { goal_contract: goalContract(), peer: 'improve on cand-A-v1' };
    expect(codes(rec)).toContain('INDEPENDENCE_VIOLATION tasks[1].inputs');
  });
  it('given no recorded proposal inputs, when validated, then INDEPENDENCE_NOT_SHOWN', () => {
    const rec = manualRunRecord();
    rec['tasks'] = [];
    expect(codes(rec)).toContain('INDEPENDENCE_NOT_SHOWN tasks');
  });
  it('given council:L1+ with reviews but no anonymization mapping, when validated, then MISSING_ANONYMIZATION', () => {
    const rec = manualRunRecord();
    rec['anonymization'] = { restricted: true, mapping: [] };
    expect(codes(rec)).toContain('MISSING_ANONYMIZATION anonymization.mapping');
  });
  it('given review inputs that name the author, when validated, then AUTHOR_ID_IN_REVIEW_INPUTS', () => {
    const rec = manualRunRecord();
    (rec['tasks'] as Record<string, unknown>[])[2]['inputs'] = { candidates: [{ author: 'solo-agent' }] };
    expect(codes(rec)).toContain('AUTHOR_ID_IN_REVIEW_INPUTS tasks[2].inputs');
  });
  it('given a decision grounded in an unknown artifact, when validated, then UNREFERENCED_CLAIM', () => {
    const rec = manualRunRecord();
    (rec['decision_record'] as Record<string, unknown>)['grounded_in'] = ['cand-A-v2', 'industry-consensus'];
    expect(codes(rec)).toContain('UNREFERENCED_CLAIM decision_record.grounded_in[1]');
  });
  it('given no terminal state, or a terminal state the record contradicts, when validated, then it is reported', () => {
    const rec = manualRunRecord();
    rec['terminal'] = null;
    expect(codes(rec)).toContain('MISSING_TERMINAL_STATE terminal.terminal_state');
    const rec2 = manualRunRecord();
    rec2['terminal'] = { terminal_state: 'decided', reason: 'x', at: 'x' };
    expect(codes(rec2)).toContain('TERMINAL_STATE_MISMATCH terminal.terminal_state');
  });
  it('given one candidate and no conflict map, when validated, then it is not a Council (19.1: phase separation in artifacts)', () => {
    const rec = manualRunRecord();
    const arts = rec['artifacts'] as Record<string, unknown[]>;
    arts['candidates'] = [arts['candidates'][0]];
    arts['conflict_maps'] = [];
    expect(codes(rec)).toEqual(
      expect.arrayContaining(['TOO_FEW_CANDIDATES artifacts.candidates', 'MISSING_CONFLICT_MAP artifacts.conflict_maps']),
    );
  });
  it('given an invalid artifact inside, when validated, then the problem names its nested field', () => {
    const rec = manualRunRecord();
    (rec['artifacts'] as { reviews: Record<string, unknown>[] }).reviews[0]['material_issues'] = [
      { claim: 'x', severity: 'huge', revision_request: 'y' },
    ];
    expect(codes(rec)).toContain('SCHEMA_VIOLATION artifacts.reviews[0].material_issues[0].severity');
  });
});

describe('spec 15.2 run aggregation (council:L4, optional): current-run artifact scores only', () => {
  const rev = (reviewer: string, target: string, evidence: number, risk: number) => ({
    review_id: `${reviewer}-${target}`,
    reviewer_member_id: reviewer,
    target_candidate_id: target,
    rubric_scores: { evidence, risk_coverage: risk },
    strengths: [],
    material_issues: [],
  });
  const input = {
    candidate_ids: ['A', 'B', 'C'],
    authors: { A: 'a', B: 'b', C: 'c' },
    reviews: [
      rev('b', 'A', 4, 2),
      rev('c', 'A', 4, 2),
      rev('a', 'B', 3, 4),
      rev('c', 'B', 3, 4),
      rev('a', 'C', 2, 1),
      rev('b', 'C', 2, 1),
      rev('a', 'A', 5, 5),
    ],
  };
  it('given rubric reviews, when Borda-counted, then each reviewer ranks what it reviewed (B beats A on two of three ballots) and self-scores are ignored', () => {
    const r = bordaCount.aggregate(input);
    expect(r.kind === 'ranking' && r.ranking.map((x) => x.candidate_id)).toEqual(['B', 'A', 'C']);
  });
  it('given rubric vectors, when no ranking is wanted, then the Pareto frontier keeps A and B and shows C dominated', () => {
    const r = paretoFrontier.aggregate(input);
    expect(r.kind === 'frontier' && r.frontier).toEqual(['A', 'B']);
    expect(r.kind === 'frontier' && r.dominated).toEqual([{ candidate_id: 'C', dominated_by: ['A', 'B'] }]);
  });
});
