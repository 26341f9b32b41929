import { COUNCIL_EVENT_TYPES as E, CouncilRole, CouncilStage } from './contracts';
import { DecisionRecord } from './decision-record';
import {
  AcpOrigin,
  AnonymizationEntry,
  Checkpoint,
  CouncilEvent,
  DecisionBridged,
  OutcomeRecorded,
  Usage,
  ValueChoiceResolved,
} from './events';
import { GoalContract } from './goal-contract';
import { DiversityProfile, MemberDescriptor } from './member-descriptor';
import { CouncilPolicy } from './policy';
import {
  ControllerDecisionNote,
  FrameCheckStatus,
  GoalContractRevision,
  Lineage,
  MemberFailureRecord,
  RefusalRecord,
  RevisionRequestRecord,
  RoundRecord,
  StoredCandidate,
  StoredConflictMap,
  StoredFrameCheck,
  StoredReview,
  TaskRecord,
  TaskStatus,
  TerminalRecord,
} from './state-records';
import { clone } from './validation';
import type { ChairSelection } from './evaluation/chair-selection';

export * from './state-records';

/** Everything a running or finished run knows; a pure projection of its stream. */
export interface RunData {
  run_id: string;
  seed: string;
  policy: CouncilPolicy;
  panel: MemberDescriptor[];
  roles: Record<string, CouncilRole[]>;
  diversity_profile: DiversityProfile | null;
  chair_order: string[];
  goal_contract: GoalContract;
  goal_contract_revisions: GoalContractRevision[];
  started_at: string;
  last_event_at: string;
  last_event_id: string;
  version: number;
  applied_event_ids: Record<string, true>;
  round: number;
  generation: number;
  stage: CouncilStage;
  stage_opened_at: string;
  tasks: Record<string, TaskRecord>;
  task_order: string[];
  candidates: Record<string, StoredCandidate>;
  candidate_order: string[];
  lineages: Record<string, Lineage>;
  lineage_order: string[];
  anonymization: AnonymizationEntry[];
  reviews: Record<string, StoredReview>;
  review_order: string[];
  conflict_maps: StoredConflictMap[];
  frame_checks: StoredFrameCheck[];
  revision_requests: RevisionRequestRecord[];
  checkpoints: Checkpoint[];
  failures: MemberFailureRecord[];
  refusals: RefusalRecord[];
  failed_members: string[];
  rounds: RoundRecord[];
  controller_decisions: ControllerDecisionNote[];
  decision: { decision_record: DecisionRecord; chair_member_id: string; task_id: string; recorded_at: string } | null;
  usage: { cost: number; tokens: number };
  outcomes: OutcomeRecorded['data'][];
  /** council:L4: how the chair was chosen, when the service chose it (RunStarted). */
  chair_selection?: ChairSelection;
  /** The ACP proposal that asked for this deliberation (RunStarted). */
  acp_origin?: AcpOrigin;
  /** The run's decision as posted to ACP (DecisionBridged). */
  acp_bridge?: DecisionBridged['data'] & { at: string };
  /** The decision owner's value choice on a `needs-human-value-choice` run (ValueChoiceResolved). */
  value_choice?: ValueChoiceResolved['data'] & { at: string };
}

/** State is a tagged union keyed by status (STYLE.md rule 3). */
export type CouncilRunState =
  | { status: 'empty' }
  | (RunData & { status: 'running' })
  | (RunData & { status: 'terminated'; terminal: TerminalRecord });

export type ActiveRun = Extract<CouncilRunState, { status: 'running' }>;
/**
 * A running run tagged by its stage (spec 9): the union the controller switches on, so each
 * stage's rule receives a run known to be in that stage.
 */
export type RunInStage<S extends CouncilStage = CouncilStage> = ActiveRun & { stage: S };
export type StagedRun = { [S in CouncilStage]: RunInStage<S> }[CouncilStage];

/** The running run as the union of its stages (its `stage` is always one of them). */
export function staged(run: ActiveRun): StagedRun {
  return run as StagedRun;
}
export type TerminatedRun = Extract<CouncilRunState, { status: 'terminated' }>;
export type StartedRun = ActiveRun | TerminatedRun;

export const EMPTY_RUN: CouncilRunState = { status: 'empty' };

function addUsage(run: RunData, usage: Usage | undefined): void {
  if (!usage) return;
  run.usage = { cost: run.usage.cost + (usage.cost ?? 0), tokens: run.usage.tokens + (usage.tokens ?? 0) };
}

function settle(run: RunData, taskId: string, status: TaskStatus, eventId: string, at: string): void {
  const task = run.tasks[taskId];
  if (!task) return;
  run.tasks[taskId] = { ...task, status, settled_at: at, settled_by: eventId };
}

function enterStage(run: RunData, stage: CouncilStage, at: string): void {
  run.stage = stage;
  run.stage_opened_at = at;
}

function setFrameCheckStatus(run: RunData, frameCheckId: string, status: FrameCheckStatus): void {
  const i = run.frame_checks.findIndex((f) => f.frame_check.frame_check_id === frameCheckId);
  if (i >= 0) run.frame_checks[i] = { ...run.frame_checks[i], status };
}

/**
 * A copy of a run that an event may be folded into in place: the run and each of its collections
 * are copied, and what they hold is shared. So a fold never changes an object below a collection:
 * it puts a changed copy in its place (settle, lineages, frame checks, usage). A copy costs the
 * size of the collections, not of the artifacts and task inputs they hold.
 */
function copyRun(state: StartedRun): StartedRun {
  const copy: Record<string, unknown> = { ...state };
  for (const [key, value] of Object.entries(state)) {
    if (Array.isArray(value)) copy[key] = [...value];
    else if (key in COLLECTIONS) copy[key] = { ...(value as object) };
  }
  return copy as unknown as StartedRun;
}

/** The record-valued fields of a run that a fold adds to or replaces entries of. */
const COLLECTIONS: Record<string, true> = { applied_event_ids: true, tasks: true, candidates: true, lineages: true, reviews: true };

function note(run: RunData, event: CouncilEvent, summary: string): void {
  run.controller_decisions.push({ event_id: event.event_id, type: event.type, at: event.occurred_at, summary });
}

/**
 * Fold one event into the run. Total and deterministic: an event already applied (same
 * event_id) is ignored, so a redelivered or replayed event is harmless. Decisions were made
 * when the event was decided; evolve only records them.
 */
export function evolveRun(state: CouncilRunState, event: CouncilEvent): CouncilRunState {
  return applyEvent(state, event, true);
}

/**
 * Fold one event into a state the caller owns, mutating it (a fold's private copy): the same
 * rules as evolveRun without copying the whole run for each event. Event data is always copied
 * into the state, never aliased, so later in-place folds never touch a caller's events.
 */
export function evolveRunInPlace(state: CouncilRunState, event: CouncilEvent): CouncilRunState {
  return applyEvent(state, event, false);
}

function applyEvent(state: CouncilRunState, event: CouncilEvent, copy: boolean): CouncilRunState {
  if (event.type === E.RunStarted) {
    if (state.status !== 'empty') return state;
    const d = event.data;
    const run: RunData & { status: 'running' } = {
      status: 'running',
      run_id: d.run_id,
      seed: d.seed,
      policy: clone(d.policy),
      panel: clone(d.panel),
      roles: {},
      diversity_profile: null,
      chair_order: [],
      goal_contract: clone(d.goal_contract),
      goal_contract_revisions: [
        {
          goal_contract: clone(d.goal_contract),
          revised_at: event.occurred_at,
          revised_by: event.actor,
          frame_check_id: null,
          comparable: true,
          restarted: false,
        },
      ],
      started_at: event.occurred_at,
      last_event_at: event.occurred_at,
      last_event_id: event.event_id,
      version: 1,
      applied_event_ids: { [event.event_id]: true },
      round: 1,
      generation: 1,
      stage: 'proposal',
      stage_opened_at: event.occurred_at,
      tasks: {},
      task_order: [],
      candidates: {},
      candidate_order: [],
      lineages: {},
      lineage_order: [],
      anonymization: [],
      reviews: {},
      review_order: [],
      conflict_maps: [],
      frame_checks: [],
      revision_requests: [],
      checkpoints: [],
      failures: [],
      refusals: [],
      failed_members: [],
      rounds: [],
      controller_decisions: [],
      decision: null,
      usage: { cost: 0, tokens: 0 },
      outcomes: [],
    };
    if (d.chair_selection) run.chair_selection = clone(d.chair_selection);
    if (d.acp_origin) run.acp_origin = clone(d.acp_origin);
    return run;
  }
  if (state.status === 'empty') return state;
  if (state.applied_event_ids[event.event_id]) return state;

  const next = (copy ? copyRun(state) : state) as StartedRun;
  next.applied_event_ids[event.event_id] = true;
  next.version += 1;
  next.last_event_id = event.event_id;
  next.last_event_at = event.occurred_at;

  switch (event.type) {
    case E.PanelAssembled:
      next.diversity_profile = clone(event.data.diversity_profile);
      next.chair_order = [...event.data.chair_order];
      next.roles = clone(event.data.roles);
      return next;
    case E.TaskIssued: {
      const d = event.data;
      next.tasks[d.task_id] = { ...clone(d), issued_at: event.occurred_at, status: 'issued' };
      next.task_order.push(d.task_id);
      return next;
    }
    case E.CandidateSubmitted: {
      const c = clone(event.data.candidate);
      const task = next.tasks[event.data.task_id];
      next.candidates[c.candidate_id] = {
        candidate: c,
        lineage_id: c.candidate_id,
        round: task?.round ?? next.round,
        generation: next.generation,
        task_id: event.data.task_id,
        submitted_at: event.occurred_at,
      };
      next.candidate_order.push(c.candidate_id);
      next.lineages[c.candidate_id] = {
        lineage_id: c.candidate_id,
        author_member_id: c.author_member_id,
        generation: next.generation,
        versions: [c.candidate_id],
      };
      next.lineage_order.push(c.candidate_id);
      settle(next, event.data.task_id, 'answered', event.event_id, event.occurred_at);
      addUsage(next, event.data.usage);
      return next;
    }
    case E.ProposalStageClosed:
      for (const a of event.data.anonymization) {
        next.anonymization.push(clone(a));
        const lineage = next.lineages[a.lineage_id];
        if (lineage) next.lineages[a.lineage_id] = { ...lineage, label: a.label, letter: a.letter };
      }
      note(next, event, `proposal stage closed with ${event.data.candidate_ids.length} candidate(s)`);
      enterStage(next, event.data.next_stage, event.occurred_at);
      return next;
    case E.ReviewSubmitted:
      for (const r of event.data.reviews) {
        next.reviews[r.review_id] = { review: clone(r), round: next.round, generation: next.generation, task_id: event.data.task_id };
        next.review_order.push(r.review_id);
      }
      settle(next, event.data.task_id, 'answered', event.event_id, event.occurred_at);
      addUsage(next, event.data.usage);
      return next;
    case E.StageClosed:
      note(next, event, `${event.data.stage} stage closed${event.data.note ? ` (${event.data.note})` : ''}`);
      enterStage(next, event.data.next_stage, event.occurred_at);
      return next;
    case E.CheckpointRecorded:
      next.checkpoints.push(clone(event.data.checkpoint));
      note(next, event, `checkpoint ${event.data.checkpoint.checkpoint_id} score ${event.data.checkpoint.score}`);
      return next;
    case E.ConflictMapRecorded: {
      const task = next.tasks[event.data.task_id];
      next.conflict_maps.push({
        conflict_map: clone(event.data.conflict_map),
        member_id: event.data.member_id,
        round: task?.round ?? next.round,
        generation: next.generation,
      });
      settle(next, event.data.task_id, 'answered', event.event_id, event.occurred_at);
      addUsage(next, event.data.usage);
      return next;
    }
    case E.FrameCheckRecorded: {
      const fc = event.data.frame_check;
      next.frame_checks.push({
        frame_check: clone(fc),
        goal_contract_id: event.data.goal_contract_id,
        round: next.round,
        status: fc.result === 'frame-holds' ? 'holds' : 'open',
      });
      settle(next, event.data.task_id, 'answered', event.event_id, event.occurred_at);
      addUsage(next, event.data.usage);
      return next;
    }
    case E.FrameChallengeDeclined: {
      setFrameCheckStatus(next, event.data.frame_check_id, 'declined');
      if (next.stage === 'frame-decision') enterStage(next, 'evaluate', event.occurred_at);
      return next;
    }
    case E.GoalContractRevised: {
      const d = event.data;
      next.goal_contract = clone(d.goal_contract);
      next.goal_contract_revisions.push({
        goal_contract: clone(d.goal_contract),
        revised_at: event.occurred_at,
        revised_by: d.revised_by,
        frame_check_id: d.frame_check_id,
        comparable: d.comparable,
        restarted: d.restart,
      });
      if (d.frame_check_id) {
        setFrameCheckStatus(next, d.frame_check_id, 'accepted');
      }
      note(next, event, `goal contract revised to ${d.goal_contract.goal_contract_id}; comparable=${d.comparable}; restart=${d.restart}`);
      if (d.restart) {
        // Artifacts of the old frame are no longer comparable: cancel what is pending, and
        // start a new generation with a fresh proposal stage in the next round.
        for (const id of next.task_order)
          if (next.tasks[id].status === 'issued') settle(next, id, 'cancelled', event.event_id, event.occurred_at);
        next.generation += 1;
        next.round += 1;
        enterStage(next, 'proposal', event.occurred_at);
      } else if (next.stage === 'frame-decision') {
        enterStage(next, 'evaluate', event.occurred_at);
      }
      return next;
    }
    case E.RoundClosed: {
      const d = event.data;
      next.rounds.push({
        round: d.round,
        decision: d.decision,
        stop_reason: d.stop_reason,
        signals: clone(d.signals),
        best_checkpoint_id: d.best_checkpoint_id,
        basis_candidate_ids: [...d.basis_candidate_ids],
        open_issue_ids: [...d.open_issue_ids],
      });
      note(next, event, `round ${d.round} closed: ${d.decision}${d.stop_reason ? ` (${d.stop_reason})` : ''}`);
      if (d.decision === 'revise') {
        next.round = d.round + 1;
        enterStage(next, 'revision', event.occurred_at);
      } else {
        enterStage(next, 'synthesis', event.occurred_at);
      }
      return next;
    }
    case E.RevisionRequested:
      next.revision_requests.push({ round: event.data.round, requests: clone(event.data.requests) });
      note(next, event, `revision requested for ${event.data.requests.length} candidate(s)`);
      return next;
    case E.RevisionSubmitted: {
      const r = clone(event.data.revision);
      const parent = next.candidates[r.parent_candidate_id];
      const lineageId = parent?.lineage_id ?? r.parent_candidate_id;
      const task = next.tasks[event.data.task_id];
      next.candidates[r.candidate_id] = {
        candidate: r,
        lineage_id: lineageId,
        round: task?.round ?? next.round,
        generation: next.generation,
        task_id: event.data.task_id,
        submitted_at: event.occurred_at,
      };
      next.candidate_order.push(r.candidate_id);
      const lineage = next.lineages[lineageId];
      if (lineage) next.lineages[lineageId] = { ...lineage, versions: [...lineage.versions, r.candidate_id] };
      settle(next, event.data.task_id, 'answered', event.event_id, event.occurred_at);
      addUsage(next, event.data.usage);
      return next;
    }
    case E.MemberFailed: {
      const d = event.data;
      const member = next.panel.find((m) => m.member_id === d.member_id);
      next.failures.push({
        member_id: d.member_id,
        role: member?.role ?? 'unknown',
        task_id: d.task_id,
        stage: d.stage,
        round: d.round,
        reason: d.reason,
        detail: d.detail,
        at: event.occurred_at,
      });
      if (!next.failed_members.includes(d.member_id)) next.failed_members.push(d.member_id);
      if (d.task_id) settle(next, d.task_id, 'failed', event.event_id, event.occurred_at);
      addUsage(next, d.usage);
      return next;
    }
    case E.TaskAnswerRefused: {
      const d = event.data;
      next.refusals.push({
        task_id: d.task_id,
        member_id: d.member_id,
        round: d.round,
        stage: d.stage,
        error: clone(d.error),
        at: event.occurred_at,
      });
      addUsage(next, d.usage);
      return next;
    }
    case E.RefusedAnswerSpendRecorded: {
      const task = next.tasks[event.data.task_id];
      if (task) next.tasks[task.task_id] = { ...task, spends_past_refusal_cap: event.data.past_cap };
      addUsage(next, event.data.usage);
      return next;
    }
    case E.ChairDecisionRecorded:
      next.decision = {
        decision_record: clone(event.data.decision_record),
        chair_member_id: event.data.chair_member_id,
        task_id: event.data.task_id,
        recorded_at: event.occurred_at,
      };
      settle(next, event.data.task_id, 'answered', event.event_id, event.occurred_at);
      addUsage(next, event.data.usage);
      return next;
    case E.RunTerminated: {
      if (next.status === 'terminated') return next;
      for (const id of next.task_order)
        if (next.tasks[id].status === 'issued') settle(next, id, 'cancelled', event.event_id, event.occurred_at);
      note(next, event, `terminated: ${event.data.terminal_state} (${event.data.reason})`);
      const terminal: TerminalRecord = {
        terminal_state: event.data.terminal_state,
        reason: event.data.reason,
        best_checkpoint_id: event.data.best_checkpoint_id,
        decision_id: event.data.decision_id,
        at: event.occurred_at,
      };
      if (event.data.note !== undefined) terminal.note = event.data.note;
      return { ...next, status: 'terminated', terminal };
    }
    case E.OutcomeRecorded:
      next.outcomes.push(clone(event.data));
      return next;
    case E.DecisionBridged:
      next.acp_bridge = { ...clone(event.data), at: event.occurred_at };
      return next;
    case E.ValueChoiceResolved:
      next.value_choice = { ...clone(event.data), at: event.occurred_at };
      // The owner's choice settles what the council left open: the terminal state follows it.
      if (next.status === 'terminated') next.terminal = { ...next.terminal, terminal_state: event.data.terminal_state };
      return next;
    default: {
      const _exhaustive: never = event;
      return _exhaustive;
    }
  }
}

/** Fold a stream from the empty state. */
export function foldRun(events: readonly CouncilEvent[], from: CouncilRunState = EMPTY_RUN): CouncilRunState {
  // Copy `from` once (on the first event that changes it), then fold in place: O(events), not
  // O(events × run size). The result never shares structure with `from`.
  let state = from;
  let owned = false;
  for (const event of events) {
    const before = state;
    state = applyEvent(state, event, !owned);
    if (state !== before) owned = true;
  }
  return state;
}

export function isStarted(state: CouncilRunState): state is StartedRun {
  return state.status !== 'empty';
}
