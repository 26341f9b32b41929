import { CouncilErrorBody } from './errors';
import { COUNCIL_COMMAND_TYPES as C } from './contracts';
import type { ChairSelection } from './evaluation/chair-selection';
import { DecisionBridged, Usage } from './events';

/**
 * The run's commands: everything that arrives from outside the controller (the decision owner,
 * members, a sweeper, ACP). Imperative; `now` is stamped by the edge from an injected clock, and
 * `event_id`, when given, makes a retried command the same command.
 */
export type StartRun = {
  type: typeof C.StartRun;
  run_id: string;
  goal_contract: unknown;
  panel: unknown;
  policy?: unknown;
  /** Randomness as an input: drives anonymous labels and review orders. */
  seed: string;
  /**
   * council:L4: the chair the service chose from its capability projection (selectChair); its
   * chair_order replaces the default, and the selection is recorded so replay needs no history.
   */
  chair_selection?: ChairSelection;
  /**
   * The ACP proposal that asked for this deliberation (checked by parseAcpOrigin): its author
   * must be the actor, and the run decides in its domain.
   */
  acp_origin?: unknown;
  actor: string;
  now: string;
  event_id?: string;
};
export type SubmitTaskResult = {
  type: typeof C.SubmitTaskResult;
  task_id: string;
  member_id: string;
  /** The member's reply body, validated against the task's stage. */
  artifact: unknown;
  usage?: Usage;
  now: string;
  event_id?: string;
};
export type ReportTaskFailure = {
  type: typeof C.ReportTaskFailure;
  task_id: string;
  member_id: string;
  detail?: string;
  usage?: Usage;
  now: string;
  event_id?: string;
};
/** The edge refused a member's answer (the CouncilError of SubmitTaskResult): keep the trace and the spend. */
export type RecordRefusedAnswer = {
  type: typeof C.RecordRefusedAnswer;
  task_id: string;
  member_id: string;
  error: CouncilErrorBody;
  usage?: Usage;
  now: string;
  event_id?: string;
};
export type ExpireTask = { type: typeof C.ExpireTask; task_id: string; now: string; event_id?: string };
export type ReviseGoalContract = {
  type: typeof C.ReviseGoalContract;
  goal_contract: unknown;
  frame_check_id?: string;
  actor: string;
  now: string;
  event_id?: string;
};
export type DeclineFrameChallenge = {
  type: typeof C.DeclineFrameChallenge;
  frame_check_id: string;
  reason: string;
  actor: string;
  now: string;
  event_id?: string;
};
export type InterruptRun = { type: typeof C.InterruptRun; reason: string; actor: string; now: string; event_id?: string };
export type RecordOutcome = { type: typeof C.RecordOutcome; outcome: unknown; actor: string; now: string; event_id?: string };
/** council:L5: `outcome` is a StructuredOutcome body; `recorded_by` is the actor. */
export type RecordStructuredOutcome = {
  type: typeof C.RecordStructuredOutcome;
  outcome: unknown;
  actor: string;
  now: string;
  event_id?: string;
};

/**
 * The bridge posted the run's decision to ACP: record who asked, on what authority, under which
 * ids. Decided after ACP accepted the entries and before an escalation is asked.
 */
export type RecordDecisionBridge = {
  type: typeof C.RecordDecisionBridge;
  bridge: DecisionBridged['data'];
  now: string;
  event_id?: string;
};
/**
 * The human's answer to a `needs-human-value-choice` run (8.5), read from the resolution of the
 * ACP escalation of its bridged proposal. `acp_event_id` is that resolution's event: the command
 * is derived from it, so a replayed or redelivered resolution is the same command.
 */
export type ResolveValueChoice = {
  type: typeof C.ResolveValueChoice;
  outcome: unknown;
  chosen_by: string;
  note: unknown;
  acp_proposal_id: string;
  acp_event_id: string;
  now: string;
  event_id?: string;
};

export type CouncilCommand =
  | StartRun
  | SubmitTaskResult
  | ReportTaskFailure
  | RecordRefusedAnswer
  | ExpireTask
  | ReviseGoalContract
  | DeclineFrameChallenge
  | InterruptRun
  | RecordOutcome
  | RecordStructuredOutcome
  | RecordDecisionBridge
  | ResolveValueChoice;
