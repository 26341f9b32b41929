import { CandidateArtifact } from './candidate-artifact';
import { ConflictMap } from './conflict-map';
import { COUNCIL_EVENT_TYPES, CouncilRole, CouncilStage, TaskStage, TerminalState } from './contracts';
import { DecisionRecord } from './decision-record';
import { FrameCheck } from './frame-check';
import { GoalContract } from './goal-contract';
import { DiversityProfile, MemberDescriptor } from './member-descriptor';
import { CouncilPolicy } from './policy';
import { ReviewArtifact } from './review-artifact';
import { RevisionArtifact } from './revision-artifact';
import type { RunAggregationResult } from './evaluation/aggregation';
import type { ChairSelection } from './evaluation/chair-selection';
import type { StructuredOutcome } from './evaluation/outcomes';
import type { AcpBridgeOptions } from './acp-bridge';

/** Cost and tokens a member reports for one task; summed against the budget (17.1). */
export interface Usage {
  cost?: number;
  tokens?: number;
}

/** The common envelope (DESIGN.md section 3). correlation_id is the run_id. */
export interface CouncilEventEnvelope<T extends string, D> {
  event_id: string;
  type: T;
  schema_version: string;
  occurred_at: string;
  actor: string;
  causation_id: string | null;
  correlation_id: string;
  data: D;
}

/** One anonymous label per candidate lineage (11.1); the mapping is the audit surface (11.2). */
export interface AnonymizationEntry {
  label: string;
  letter: string;
  lineage_id: string;
  author_member_id: string;
}

export interface SelectedIssue {
  issue_id: string;
  review_id: string;
  target_candidate_id: string;
  claim: string;
  severity: 'low' | 'medium' | 'high';
  revision_request: string;
  could_change: string[];
  evidence_refs: string[];
}

export interface RevisionRequestEntry {
  target_candidate_id: string;
  author_member_id: string;
  issues: SelectedIssue[];
}

export interface Checkpoint {
  checkpoint_id: string;
  round: number;
  generation: number;
  goal_contract_id: string;
  candidate_ids: string[];
  /** Current-run artifact scores only (section 16): never historical capability. */
  scores: Record<string, number | null>;
  score: number | null;
  /**
   * council:L4: the policy's aggregation of this round's reviews (15.2), seeded by
   * `<run seed>:<checkpoint_id>`, with its explanation. The checkpoint's `score` is then the
   * cardinal score (mean rubric, or the weighted rubric) of the candidate it selects.
   */
  aggregation?: RunAggregationResult;
}

export type QualitySignal =
  | { signal: 'all-material-issues-resolved-or-retained' }
  | { signal: 'marginal-gain-plateau'; gains: number[] }
  | { signal: 'candidates-stable' }
  | { signal: 'regression'; best_checkpoint_id: string; best_score: number; latest_score: number }
  | { signal: 'oscillation'; lineage_id: string; positions: string[]; discriminating_evidence: string[] }
  | { signal: 'value-choice-required'; conflict_ids: string[] }
  /** 17.3: open issues whose author failed: nobody answered them, so they are not resolved. */
  | { signal: 'consensus-by-participant-failure'; member_ids: string[]; issue_ids: string[] };

export type RoundDecision = 'revise' | 'synthesize';

export type StopReason =
  | 'single-round-profile'
  | 'all-material-issues-resolved-or-retained'
  | 'marginal-gain-plateau'
  | 'candidates-stable'
  | 'regression-to-best-checkpoint'
  | 'oscillation'
  | 'value-choice-required'
  | 'participant-failure'
  | 'max-rounds';

export type TerminationReason =
  | 'decision-recorded'
  | 'max-time'
  | 'max-cost'
  | 'max-tokens'
  | 'human-interrupt'
  | 'below-quorum'
  | 'incomplete-panel-high-risk'
  | 'chair-failed-without-fallback'
  | 'no-candidates';

export type FailureReason = 'timeout' | 'reported-failure';

/** What is left of the run's budget when a task is issued, so a member can size its work. */
export interface BudgetRemaining {
  /** Rounds left, this one included. */
  rounds: number;
  time_ms: number;
  cost?: number;
  tokens?: number;
}

export interface TaskIssuedData {
  task_id: string;
  member_id: string;
  round: number;
  generation: number;
  stage: TaskStage;
  role: CouncilRole;
  deadline: string;
  inputs: Record<string, unknown>;
  budget_remaining?: BudgetRemaining;
}

/**
 * The ACP proposal that asked for this deliberation (the bridge from ACP, an extension): the run's
 * lineage points at it, and its decision is posted back to ACP `caused_by` it.
 */
export interface AcpOrigin {
  proposal_id: string;
  domain: string;
  /** The proposal's author, authenticated by ACP intake: the run's decision owner. */
  author: string;
  /** How the decision goes back to ACP (by default the originating proposal's quorum and policy). */
  bridge: AcpBridgeOptions;
}

export type RunStarted = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.RunStarted,
  {
    run_id: string;
    goal_contract: GoalContract;
    panel: MemberDescriptor[];
    policy: CouncilPolicy;
    seed: string;
    /** council:L4: how the service chose the chair from its capability projection (14, 16.6). */
    chair_selection?: ChairSelection;
    /** Started from an ACP proposal that asked for deliberation. */
    acp_origin?: AcpOrigin;
  }
>;
export type PanelAssembled = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.PanelAssembled,
  { diversity_profile: DiversityProfile; chair_order: string[]; roles: Record<string, CouncilRole[]> }
>;
export type TaskIssued = CouncilEventEnvelope<typeof COUNCIL_EVENT_TYPES.TaskIssued, TaskIssuedData>;
export type CandidateSubmitted = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.CandidateSubmitted,
  { task_id: string; member_id: string; candidate: CandidateArtifact; usage?: Usage }
>;
export type ProposalStageClosed = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.ProposalStageClosed,
  { round: number; generation: number; candidate_ids: string[]; anonymization: AnonymizationEntry[]; next_stage: CouncilStage }
>;
export type ReviewSubmitted = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.ReviewSubmitted,
  { task_id: string; member_id: string; reviews: ReviewArtifact[]; usage?: Usage }
>;
export type StageClosed = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.StageClosed,
  { round: number; stage: CouncilStage; next_stage: CouncilStage; note?: string }
>;
export type CheckpointRecorded = CouncilEventEnvelope<typeof COUNCIL_EVENT_TYPES.CheckpointRecorded, { checkpoint: Checkpoint }>;
export type ConflictMapRecorded = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.ConflictMapRecorded,
  { task_id: string; member_id: string; conflict_map: ConflictMap; usage?: Usage }
>;
export type FrameCheckRecorded = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.FrameCheckRecorded,
  { task_id: string; member_id: string; frame_check: FrameCheck; goal_contract_id: string; usage?: Usage }
>;
export type FrameChallengeDeclined = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.FrameChallengeDeclined,
  { frame_check_id: string; declined_by: string; reason: string }
>;
export type GoalContractRevised = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.GoalContractRevised,
  {
    goal_contract: GoalContract;
    previous_goal_contract_id: string;
    frame_check_id: string | null;
    revised_by: string;
    /** Controller's deterministic judgement (section 13): do existing artifacts still compare? */
    comparable: boolean;
    /** Not comparable and a round is left: proposal restarts from the revised contract. */
    restart: boolean;
    note?: string;
  }
>;
export type RoundClosed = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.RoundClosed,
  {
    round: number;
    signals: QualitySignal[];
    decision: RoundDecision;
    stop_reason?: StopReason;
    best_checkpoint_id: string | null;
    /** Candidates the next stage works from; after a regression, the best checkpoint's. */
    basis_candidate_ids: string[];
    open_issue_ids: string[];
  }
>;
export type RevisionRequested = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.RevisionRequested,
  { round: number; requests: RevisionRequestEntry[] }
>;
export type RevisionSubmitted = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.RevisionSubmitted,
  { task_id: string; member_id: string; revision: RevisionArtifact; usage?: Usage }
>;
export type MemberFailed = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.MemberFailed,
  { member_id: string; task_id: string | null; round: number; stage: CouncilStage; reason: FailureReason; detail?: string; usage?: Usage }
>;
/** A member's answer the controller refused (the member may still correct it before the deadline). */
export type TaskAnswerRefused = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.TaskAnswerRefused,
  {
    task_id: string;
    member_id: string;
    round: number;
    stage: TaskStage;
    error: { code: string; message: string; field?: string };
    usage?: Usage;
  }
>;
/**
 * A refused answer past its task's refusal cap: the refusal itself is no longer recorded (no log
 * flooding), but the spend it reported still counts against the budget (17.1). `past_cap` numbers
 * these records per task (1 for the first after the cap).
 */
export type RefusedAnswerSpendRecorded = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.RefusedAnswerSpendRecorded,
  { task_id: string; member_id: string; round: number; stage: TaskStage; past_cap: number; usage: Usage }
>;
export type ChairDecisionRecorded = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.ChairDecisionRecorded,
  { task_id: string; chair_member_id: string; decision_record: DecisionRecord; usage?: Usage }
>;
export type RunTerminated = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.RunTerminated,
  { terminal_state: TerminalState; reason: TerminationReason; best_checkpoint_id: string | null; decision_id: string | null; note?: string }
>;
export type OutcomeRecorded = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.OutcomeRecorded,
  {
    outcome_id: string;
    observed_at: string;
    summary: string;
    source: string;
    evidence_refs: string[];
    /** council:L5: the structured outcome (15.4), linked to the decision; calibration reads it. */
    structured?: StructuredOutcome;
  }
>;

/**
 * The run's DecisionRecord was posted to ACP (an extension). Recorded once ACP accepted the two
 * entries and before any escalation is asked, so the human's resolution is always later in the log.
 */
export type DecisionBridged = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.DecisionBridged,
  {
    /** Who asked for the post: the decision owner, by a signed command or by the ACP proposal that started the run. */
    requested_by: string;
    authorised_by: { kind: 'owner-command' } | { kind: 'acp-origin'; proposal_id: string };
    /** The ACP author of the entries: the council service's own participant. */
    author: string;
    domain: string;
    observation_id: string;
    proposal_id: string;
    caused_by: string[];
    /** A value choice: the proposal is escalated to the decision owner. */
    escalated: boolean;
  }
>;

/**
 * The decision owner's value choice (spec 8.5: value conflicts return to the human owner): the
 * resolution of the ACP escalation of the run's bridged proposal. `approved` adopts the council's
 * DecisionRecord, and the run's terminal state becomes `decided` or `decided-with-dissent`;
 * `rejected` declines it, and the run stays `needs-human-value-choice` with the choice recorded.
 */
export type ValueChoiceResolved = CouncilEventEnvelope<
  typeof COUNCIL_EVENT_TYPES.ValueChoiceResolved,
  {
    outcome: 'approved' | 'rejected';
    chosen_by: string;
    note: string;
    /** The value conflicts the choice settles (the latest conflict map's unresolved ones). */
    conflict_ids: string[];
    previous_terminal_state: TerminalState;
    terminal_state: TerminalState;
    /** Where the choice was made: the ACP proposal and the event that resolved its escalation. */
    source: { acp_proposal_id: string; acp_event_id: string };
  }
>;

export type CouncilEvent =
  | RunStarted
  | PanelAssembled
  | TaskIssued
  | CandidateSubmitted
  | ProposalStageClosed
  | ReviewSubmitted
  | StageClosed
  | CheckpointRecorded
  | ConflictMapRecorded
  | FrameCheckRecorded
  | FrameChallengeDeclined
  | GoalContractRevised
  | RoundClosed
  | RevisionRequested
  | RevisionSubmitted
  | MemberFailed
  | TaskAnswerRefused
  | RefusedAnswerSpendRecorded
  | ChairDecisionRecorded
  | RunTerminated
  | OutcomeRecorded
  | DecisionBridged
  | ValueChoiceResolved;

export type EventOf<T extends CouncilEvent['type']> = Extract<CouncilEvent, { type: T }>;
