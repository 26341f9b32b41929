/**
 * Names are contracts (STYLE.md rule 4): event type strings, subjects, stream names and the
 * closed vocabularies of the Council spec live here, once, and are never derived from class
 * names.
 */

export const COUNCIL_PROTOCOL_ID = 'council';
export const COUNCIL_PROTOCOL_VERSION = '0.1.0';
/** Version of the event envelope and event data written by this library. */
export const COUNCIL_EVENT_SCHEMA_VERSION = '1';

/** Event type strings (past tense). */
export const COUNCIL_EVENT_TYPES = {
  RunStarted: 'RunStarted',
  PanelAssembled: 'PanelAssembled',
  TaskIssued: 'TaskIssued',
  CandidateSubmitted: 'CandidateSubmitted',
  ProposalStageClosed: 'ProposalStageClosed',
  ReviewSubmitted: 'ReviewSubmitted',
  StageClosed: 'StageClosed',
  CheckpointRecorded: 'CheckpointRecorded',
  ConflictMapRecorded: 'ConflictMapRecorded',
  FrameCheckRecorded: 'FrameCheckRecorded',
  FrameChallengeDeclined: 'FrameChallengeDeclined',
  GoalContractRevised: 'GoalContractRevised',
  RoundClosed: 'RoundClosed',
  RevisionRequested: 'RevisionRequested',
  RevisionSubmitted: 'RevisionSubmitted',
  MemberFailed: 'MemberFailed',
  TaskAnswerRefused: 'TaskAnswerRefused',
  /** The spend a refused answer reported once its task's refusals reached the cap (17.1: budgets count every spend). */
  RefusedAnswerSpendRecorded: 'RefusedAnswerSpendRecorded',
  ChairDecisionRecorded: 'ChairDecisionRecorded',
  RunTerminated: 'RunTerminated',
  OutcomeRecorded: 'OutcomeRecorded',
  /** The bridge (an extension): the run's DecisionRecord was posted to ACP, on whose request, under which ids. */
  DecisionBridged: 'DecisionBridged',
  /** The decision owner's value choice (8.5: value conflicts return to the human owner). */
  ValueChoiceResolved: 'ValueChoiceResolved',
} as const;

export type CouncilEventType = (typeof COUNCIL_EVENT_TYPES)[keyof typeof COUNCIL_EVENT_TYPES];

/** Command type strings (imperative). */
export const COUNCIL_COMMAND_TYPES = {
  StartRun: 'StartRun',
  SubmitTaskResult: 'SubmitTaskResult',
  ReportTaskFailure: 'ReportTaskFailure',
  RecordRefusedAnswer: 'RecordRefusedAnswer',
  ExpireTask: 'ExpireTask',
  ReviseGoalContract: 'ReviseGoalContract',
  DeclineFrameChallenge: 'DeclineFrameChallenge',
  InterruptRun: 'InterruptRun',
  RecordOutcome: 'RecordOutcome',
  /** council:L5: a structured outcome (15.4) by the decision owner or an evaluator. */
  RecordStructuredOutcome: 'RecordStructuredOutcome',
  /** The bridge: record that the run's decision was posted to ACP (after ACP accepted the entries). */
  RecordDecisionBridge: 'RecordDecisionBridge',
  /** The owner's answer to a `needs-human-value-choice` run, from the ACP escalation it resolved. */
  ResolveValueChoice: 'ResolveValueChoice',
} as const;

export type CouncilCommandType = (typeof COUNCIL_COMMAND_TYPES)[keyof typeof COUNCIL_COMMAND_TYPES];

/** NATS subjects of the Council API (DESIGN.md section 5). */
export const COUNCIL_SUBJECT_PREFIX = 'council.v1';
export const COUNCIL_SUBJECTS = {
  start: `${COUNCIL_SUBJECT_PREFIX}.start`,
  get: `${COUNCIL_SUBJECT_PREFIX}.get`,
  outcome: `${COUNCIL_SUBJECT_PREFIX}.outcome`,
  decisions: `${COUNCIL_SUBJECT_PREFIX}.decisions`,
} as const;

export function councilTaskSubject(memberId: string, prefix: string = COUNCIL_SUBJECT_PREFIX): string {
  return `${prefix}.tasks.${memberId}`;
}

export const COUNCIL_RUN_STREAM_PREFIX = 'council-run-';

/** One stream per run (DESIGN.md section 3). */
export function councilRunStream(runId: string): string {
  return COUNCIL_RUN_STREAM_PREFIX + runId;
}

/** Implementation levels (missing-tables A.3). L4/L5 are named but not claimed by this library. */
export const COUNCIL_LEVELS = ['council:L0', 'council:L1', 'council:L2', 'council:L3', 'council:L4', 'council:L5'] as const;
export type CouncilLevel = (typeof COUNCIL_LEVELS)[number];

export function levelNumber(level: CouncilLevel): number {
  return Number(level.slice('council:L'.length));
}

/** Roles (missing-tables A.2). Controller and human owner are never panel members. */
export const COUNCIL_ROLES = ['proposer', 'reviewer', 'reviser', 'moderator', 'frame-observer', 'chair', 'evaluator'] as const;
export type CouncilRole = (typeof COUNCIL_ROLES)[number];

/** Default capabilities of a member whose descriptor names none. */
export const DEFAULT_MEMBER_ROLES: readonly CouncilRole[] = ['proposer', 'reviewer', 'reviser'];

/** Stages of a run (spec section 9). `evaluate` is the controller's own step, no task. */
export const COUNCIL_STAGES = [
  'proposal',
  'review',
  'conflict-map',
  'frame-check',
  'frame-decision',
  'evaluate',
  'revision',
  'synthesis',
] as const;
export type CouncilStage = (typeof COUNCIL_STAGES)[number];

/** Stages that send a task to members, and the role each task asks for. */
export const TASK_STAGE_ROLE = {
  proposal: 'proposer',
  review: 'reviewer',
  'conflict-map': 'moderator',
  'frame-check': 'frame-observer',
  revision: 'reviser',
  synthesis: 'chair',
} as const satisfies Partial<Record<CouncilStage, CouncilRole>>;
export type TaskStage = keyof typeof TASK_STAGE_ROLE;
export const TASK_STAGES = Object.keys(TASK_STAGE_ROLE) as TaskStage[];

/** Terminal states (spec 17.4). */
export const TERMINAL_STATES = [
  'decided',
  'decided-with-dissent',
  'abstained-insufficient-evidence',
  'needs-human-value-choice',
  'budget-exhausted-best-checkpoint',
  'failed-below-quorum',
] as const;
export type TerminalState = (typeof TERMINAL_STATES)[number];

/** Recommended conflict types (spec 8.5). */
export const CONFLICT_TYPES = [
  'fact',
  'causal-model',
  'information-set',
  'value',
  'risk-preference',
  'time-horizon',
  'resource-constraint',
  'goal/frame',
] as const;
export type ConflictType = (typeof CONFLICT_TYPES)[number];

export const LEVELS_OF_THREE = ['low', 'medium', 'high'] as const;
export type RiskLevel = (typeof LEVELS_OF_THREE)[number];
export type Severity = RiskLevel;
export type Confidence = RiskLevel;
export type DecisionImpact = RiskLevel;

export const CONFIDENCE_SCHEMES = ['ordinal-confidence-v1'] as const;
export type ConfidenceScheme = (typeof CONFIDENCE_SCHEMES)[number];

/**
 * What a material issue could change (spec section 12). An issue that names none of these is a
 * style issue and never justifies a round.
 */
export const DECISION_IMPACT_TARGETS = [
  'recommendation',
  'confidence',
  'risk_controls',
  'actions',
  'reversal_conditions',
  'goal_contract',
] as const;
export type DecisionImpactTarget = (typeof DECISION_IMPACT_TARGETS)[number];

export const CHAIR_MODES = ['select', 'bounded-synthesis', 'grounded-reframing'] as const;
export type ChairMode = (typeof CHAIR_MODES)[number];

/** Members id goes into a NATS subject token, so it is restricted to token-safe characters. */
// Starts and ends with a letter or digit: an id that is only separators, or starts or ends with
// one, would be a word part of other words (`7_` names `_`) and could not be scrubbed cleanly.
export const MEMBER_ID_PATTERN = /^[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?$/;
/** Member ids that would read as the controller's blind refs (`anon-A-v1`, `review-2`) are refused. */
export const RESERVED_MEMBER_ID = /^(?:anon-[A-Z]+-v\d+|review-\d+)$/;
