import { CandidateArtifact } from './candidate-artifact';
import { ConflictMap } from './conflict-map';
import { CouncilRole, CouncilStage, TaskStage, TerminalState } from './contracts';
import { BudgetRemaining, FailureReason, RevisionRequestEntry, RoundClosed, StopReason, TerminationReason } from './events';
import { FrameCheck } from './frame-check';
import { GoalContract } from './goal-contract';
import { ReviewArtifact } from './review-artifact';
import { RevisionArtifact } from './revision-artifact';

/* The records a run's state keeps: one per task, candidate, lineage, review, failure, round. */

export type TaskStatus = 'issued' | 'answered' | 'failed' | 'cancelled';

export interface TaskRecord {
  task_id: string;
  member_id: string;
  round: number;
  generation: number;
  stage: TaskStage;
  role: CouncilRole;
  issued_at: string;
  deadline: string;
  inputs: Record<string, unknown>;
  budget_remaining?: BudgetRemaining;
  status: TaskStatus;
  settled_at?: string;
  /** The event that answered or failed it: a redelivered reply with the same id is a no-op. */
  settled_by?: string;
  /** Refused answers past the refusal cap whose spend was recorded (RefusedAnswerSpendRecorded). */
  spends_past_refusal_cap?: number;
}

export interface StoredCandidate {
  candidate: CandidateArtifact | RevisionArtifact;
  lineage_id: string;
  round: number;
  generation: number;
  task_id: string;
  submitted_at: string;
}

export interface Lineage {
  lineage_id: string;
  author_member_id: string;
  generation: number;
  label?: string;
  letter?: string;
  versions: string[];
}

export interface StoredReview {
  review: ReviewArtifact;
  round: number;
  generation: number;
  task_id: string;
}

export interface StoredConflictMap {
  conflict_map: ConflictMap;
  member_id: string;
  round: number;
  generation: number;
}

export type FrameCheckStatus = 'holds' | 'open' | 'accepted' | 'declined';

export interface StoredFrameCheck {
  frame_check: FrameCheck;
  goal_contract_id: string;
  round: number;
  status: FrameCheckStatus;
}

export interface GoalContractRevision {
  goal_contract: GoalContract;
  revised_at: string;
  revised_by: string;
  frame_check_id: string | null;
  comparable: boolean;
  restarted: boolean;
}

export interface MemberFailureRecord {
  member_id: string;
  role: string;
  task_id: string | null;
  stage: CouncilStage;
  round: number;
  reason: FailureReason;
  detail?: string;
  at: string;
}

export interface RefusalRecord {
  task_id: string;
  member_id: string;
  round: number;
  stage: TaskStage;
  error: { code: string; message: string; field?: string };
  at: string;
}

export interface RoundRecord {
  round: number;
  decision: RoundClosed['data']['decision'];
  stop_reason?: StopReason;
  signals: RoundClosed['data']['signals'];
  best_checkpoint_id: string | null;
  basis_candidate_ids: string[];
  open_issue_ids: string[];
}

export interface RevisionRequestRecord {
  round: number;
  requests: RevisionRequestEntry[];
}

export interface ControllerDecisionNote {
  event_id: string;
  type: string;
  at: string;
  summary: string;
}

export interface TerminalRecord {
  terminal_state: TerminalState;
  reason: TerminationReason;
  best_checkpoint_id: string | null;
  decision_id: string | null;
  at: string;
  note?: string;
}
