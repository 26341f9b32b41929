import { CandidateArtifact } from '../candidate-artifact';
import { COUNCIL_PROTOCOL_ID, COUNCIL_PROTOCOL_VERSION, Confidence, TerminalState } from '../contracts';
import { DecisionRecord, DissentEntry, NO_DECISION, SYNTHESIS } from '../decision-record';
import { MemberDescriptor } from '../member-descriptor';
import { DEFAULT_POLICY } from '../policy';
import { ReviewArtifact } from '../review-artifact';
import { RunRecord } from '../run-record';
import { GoalContract } from '../goal-contract';

/**
 * Test data for the evaluation layer: RunRecords written by hand, in the spec's 8.7 shape,
 * so the pure folds are tested without running a controller.
 */
export function memberFixture(member_id: string, model_family = 'model-a', model_version = 'v1', tools: string[] = []): MemberDescriptor {
  return {
    member_id,
    model_family,
    model_version,
    provider_runtime: 'test',
    role: 'builder',
    role_contract: 'propose and review',
    context_scope: 'goal contract',
    memory_scope: 'none',
    tools,
    independence_group: `group-${model_family}`,
    council_roles: ['proposer', 'reviewer', 'reviser', 'chair'],
  };
}

export interface RunFixture {
  run_id: string;
  /** When the run ended (ISO). */
  at: string;
  members: MemberDescriptor[];
  candidates: { id: string; author: string; confidence?: Confidence; expected_outcomes?: string[] }[];
  reviews?: { reviewer: string; target: string; high?: boolean }[];
  /** Accepted / rejected dispositions of review issues (review id → accepted?). */
  dispositions?: Record<string, boolean>;
  chair: string | null;
  /** A candidate id, `synthesis` or `no-decision`; null for a run without a DecisionRecord. */
  selected: string | null;
  incorporated?: string[];
  confidence?: Confidence;
  dissent?: DissentEntry[];
  terminal_state?: TerminalState;
}

export function runRecordFixture(f: RunFixture): RunRecord {
  const candidates: CandidateArtifact[] = f.candidates.map((c) => ({
    candidate_id: c.id,
    author_member_id: c.author,
    version: 1,
    position: `position of ${c.id}`,
    claims: [],
    evidence_refs: [],
    assumptions: [],
    expected_outcomes: c.expected_outcomes ?? [`${c.id} works`],
    risks: [],
    reversal_signals: [],
    actions: [],
    confidence_scheme: 'ordinal-confidence-v1',
    confidence: c.confidence ?? 'medium',
    parent_candidate_id: null,
  }));
  const reviews: ReviewArtifact[] = (f.reviews ?? []).map((r) => ({
    review_id: `${f.run_id}:rev-${r.reviewer}-on-${r.target}`,
    reviewer_member_id: r.reviewer,
    target_candidate_id: r.target,
    rubric_scores: { evidence: r.high ? 1 : 4 },
    strengths: [],
    material_issues: r.high ? [{ claim: `${r.target} breaks`, evidence_refs: [], severity: 'high', revision_request: 'fix it' }] : [],
  }));
  const revisions = Object.entries(f.dispositions ?? {}).map(([reviewId, accepted], i) => {
    const target = reviews.find((r) => r.review_id === reviewId)?.target_candidate_id ?? f.candidates[0].id;
    const parent = candidates.find((c) => c.candidate_id === target) as CandidateArtifact;
    return {
      ...parent,
      candidate_id: `${target}-v2-${i}`,
      version: 2,
      parent_candidate_id: target,
      responses: [
        accepted
          ? { review_issue: `${reviewId}#issue-1`, disposition: 'accepted' as const, change: 'changed' }
          : { review_issue: `${reviewId}#issue-1`, disposition: 'rejected' as const, reason: 'evidence says no' },
      ],
    };
  });
  const decision: DecisionRecord | null =
    f.selected === null
      ? null
      : {
          decision_id: `${f.run_id}:decision`,
          goal_contract_id: 'gc-001',
          selected_path: f.selected,
          decision: f.selected === NO_DECISION ? 'no decision' : `do ${f.selected}`,
          grounded_in: f.selected === NO_DECISION || f.selected === SYNTHESIS ? (f.incorporated ?? []) : [f.selected],
          incorporated: f.incorporated ?? [],
          rejected: [],
          unresolved_dissent: f.dissent ?? [],
          actions: f.selected === NO_DECISION ? [] : ['ship it'],
          stop_loss_conditions: f.selected === NO_DECISION ? [] : ['error rate above 2%'],
          reversal_signals: f.selected === NO_DECISION ? [] : ['users revert'],
          confidence_scheme: 'ordinal-confidence-v1',
          confidence: f.confidence ?? 'medium',
          decision_owner: 'owner-1',
        };
  const groups: Record<string, string[]> = {};
  for (const m of f.members) (groups[m.independence_group] ??= []).push(m.member_id);
  const goal: GoalContract = {
    goal_contract_id: 'gc-001',
    question: 'which path?',
    goal: 'a working path',
    success_criteria: ['it works'],
    constraints: [],
    non_goals: [],
    decision_owner: 'owner-1',
    risk_level: 'medium',
    time_horizon: '30 days',
    evidence_set: [],
    unknowns: [],
    budget: { max_rounds: 3, max_time: '15m' },
  };
  return {
    run_record_id: `${f.run_id}:run-record`,
    run_id: f.run_id,
    protocol: COUNCIL_PROTOCOL_ID,
    protocol_version: COUNCIL_PROTOCOL_VERSION,
    level: 'council:L3',
    policy: DEFAULT_POLICY,
    controller_id: 'council-controller',
    participants: f.members,
    independence_groups: groups,
    goal_contract_revisions: [
      { goal_contract: goal, revised_at: f.at, revised_by: 'owner-1', frame_check_id: null, comparable: true, restarted: false },
    ],
    artifacts: { candidates: [...candidates, ...revisions], reviews, conflict_maps: [], frame_checks: [] },
    lineage: f.candidates.map((c) => ({
      lineage_id: `lineage-${c.id}`,
      author_member_id: c.author,
      versions: [c.id, ...revisions.filter((r) => r.parent_candidate_id === c.id).map((r) => r.candidate_id)],
    })),
    anonymization: { restricted: true, mapping: [] },
    tasks: [
      ...f.candidates.map((c, i) => ({
        task_id: `${f.run_id}:t-prop-${i}`,
        member_id: c.author,
        round: 1,
        stage: 'proposal',
        status: 'answered',
        inputs: {},
      })),
      ...(f.chair
        ? [{ task_id: `${f.run_id}:t-synth`, member_id: f.chair, round: 1, stage: 'synthesis', status: 'answered', inputs: {} }]
        : []),
    ],
    budgets: { budget: goal.budget, usage: { rounds: 1, elapsed_ms: 1000, cost: 0, tokens: 0 } },
    timing: { started_at: f.at, ended_at: f.at },
    controller_decisions: [],
    rounds: [],
    revision_requests: [],
    checkpoints: [],
    best_checkpoint_id: null,
    failures: [],
    refusals: [],
    degraded_modes: [],
    decision_record: decision,
    terminal: {
      terminal_state:
        f.terminal_state ??
        (decision && decision.unresolved_dissent.length ? 'decided-with-dissent' : decision ? 'decided' : 'failed-below-quorum'),
      reason: 'decision-recorded',
      at: f.at,
    },
    outcomes: [],
  };
}
