import {
  checkHardLimits,
  computeCheckpoint,
  decisionCheckpoint,
  deriveTerminalState,
  evaluateRound,
  runDeadlineMs,
} from './convergence-and-termination';
import {
  CONFLICT_TYPES,
  COUNCIL_EVENT_SCHEMA_VERSION,
  COUNCIL_EVENT_TYPES as E,
  TASK_STAGE_ROLE,
  TaskStage,
  TerminalState,
  councilTaskSubject,
} from './contracts';
import { CouncilError } from './errors';
import { degradedVerdict } from './failure-and-degraded-operation';
import { frameCheckDue, openFrameChallenges } from './frame-challenge';
import {
  BudgetRemaining,
  CheckpointRecorded,
  CouncilEvent,
  CouncilEventEnvelope,
  MemberFailed,
  ProposalStageClosed,
  RevisionRequested,
  RoundClosed,
  RunTerminated,
  StageClosed,
  TaskIssued,
  TerminationReason,
} from './events';
import { GoalContract } from './goal-contract';
import { proposalTaskInputs } from './independent-proposal';
import { stageTimeoutMs } from './policy';
import { assignAnonymousLabels, reviewTargetsFor, reviewTaskInputs, blindCandidate, blindReview } from './review-and-anonymity';
import { activeMembersWithRole, currentCandidateIds, tasksOf } from './run-queries';
import { ActiveRun, CouncilRunState, RunData, RunInStage, evolveRun, evolveRunInPlace, staged } from './state';
import { revisionTaskInputs } from './targeted-revision';
import { synthesisTaskInputs, nextChair } from './chair-and-synthesis';
import { CouncilStage } from './contracts';
import { clone, instantMs, isoFromMs } from './validation';

/** What a member receives on `council.v1.tasks.<member_id>` (DESIGN.md section 5). */
export interface CouncilTaskRequest {
  run_id: string;
  task_id: string;
  stage: TaskStage;
  role: string;
  deadline: string;
  goal_contract: GoalContract;
  inputs: Record<string, unknown>;
  /** What is left of the run's budget at issue time (rounds include this one). */
  budget_remaining?: BudgetRemaining;
}

/**
 * The run's budget left at `now`: every spend reported so far, refused answers and failures
 * included.
 */
export function budgetRemaining(run: RunData, now: string): BudgetRemaining {
  const b = run.goal_contract.budget;
  const left: BudgetRemaining = {
    rounds: Math.max(b.max_rounds - run.round + 1, 0),
    time_ms: Math.max(runDeadlineMs(run) - instantMs(now, 'now'), 0),
  };
  if (b.max_cost !== undefined) left.cost = Math.max(b.max_cost - run.usage.cost, 0);
  if (b.max_tokens !== undefined) left.tokens = Math.max(b.max_tokens - run.usage.tokens, 0);
  return left;
}

/**
 * What the controller decided. Every action carries the event that records it: the service
 * appends all events of one decideNext call atomically, and only then sends the IssueTask
 * requests, so a crash between the two never loses a decision and a restart resends (same
 * task_id) instead of re-deciding.
 */
export type ControllerAction =
  | { kind: 'IssueTask'; subject: string; request: CouncilTaskRequest; event: TaskIssued }
  | { kind: 'RecordTimeout'; event: MemberFailed }
  | { kind: 'CloseStage'; event: ProposalStageClosed | StageClosed }
  | { kind: 'RecordCheckpoint'; event: CheckpointRecorded }
  | { kind: 'CloseRound'; event: RoundClosed }
  | { kind: 'RequestRevision'; event: RevisionRequested }
  | { kind: 'Terminate'; event: RunTerminated };

export interface ControllerOptions {
  /**
   * Event ids of controller events are derived from a deterministic key (e.g.
   * `<task_id>:issued`), so deciding twice on the same state yields the same ids and the
   * event log deduplicates the retry. Map the key to your id format here if needed.
   */
  eventId?: (key: string) => string;
  /** Task subject prefix, default `council.v1`. */
  subjectPrefix?: string;
}

/** Deterministic task id: one task per member, stage and round. */
export function councilTaskId(runId: string, round: number, stage: TaskStage, memberId: string): string {
  return `${runId}:${round}:${stage}:${memberId}`;
}

const MAX_STEPS = 10_000;

/**
 * The deterministic controller (spec 7.1, 17): given the folded run and the current time,
 * what must happen now. Pure: the same state and `now` give the same actions and event ids.
 * It never writes semantic content: it issues tasks, closes stages and rounds, records
 * checkpoints and timeouts, and terminates.
 */
export function decideNext(state: CouncilRunState, now: string, options: ControllerOptions = {}): ControllerAction[] {
  return decideNextFolding(state, now, options).actions;
}

/** What decideNext decided, and the run once its actions' events are folded in. */
export interface ControllerStep {
  actions: ControllerAction[];
  /**
   * `state` itself when there is nothing to do; never shares structure with it otherwise, unless
   * `owned`.
   */
  state: CouncilRunState;
}

/**
 * decideNext, also returning the state after its events, so a caller that appends them need not
 * fold them again. With `owned`, the caller hands over a private copy of the run (one it folded
 * itself and shares with nobody): it is folded in place instead of being copied first.
 */
export function decideNextFolding(state: CouncilRunState, now: string, options: ControllerOptions = {}, owned = false): ControllerStep {
  instantMs(now, 'now');
  if (state.status !== 'running') return { actions: [], state };
  const actions: ControllerAction[] = [];
  // A private copy of the run, made on the first action and folded in place after that.
  let s: CouncilRunState = state;
  for (let i = 0; i < MAX_STEPS; i++) {
    if (s.status !== 'running') return { actions, state: s };
    const step = nextStep(s, now, options);
    if (step.length === 0) return { actions, state: s };
    for (const a of step) {
      actions.push(a);
      // Actions may reference parts of `s` (inputs, the goal contract): freeze their events
      // before the in-place fold can touch the state they were built from.
      a.event = clone(a.event) as never;
      // The request says what the event records: it shares the frozen event's inputs and budget
      // (the goal contract is never changed in place: a revision replaces it).
      if (a.kind === 'IssueTask')
        a.request = {
          ...a.request,
          inputs: a.event.data.inputs,
          ...(a.event.data.budget_remaining ? { budget_remaining: a.event.data.budget_remaining } : {}),
        };
      const before: CouncilRunState = s;
      s = owned ? evolveRunInPlace(s, a.event) : evolveRun(s, a.event);
      // An event the run already holds (a commit decided again) leaves `s` as it was, not copied.
      if (s !== before) owned = true;
    }
  }
  throw new CouncilError('INTERNAL', 'controller did not reach a waiting state');
}

/** The events of a list of actions, in order: what the service appends. */
export function controllerEvents(actions: readonly ControllerAction[]): CouncilEvent[] {
  return actions.map((a) => a.event);
}

/** The task requests of a list of actions: what the service sends after appending. */
export function taskRequests(actions: readonly ControllerAction[]): { subject: string; request: CouncilTaskRequest }[] {
  return actions.flatMap((a) => (a.kind === 'IssueTask' ? [{ subject: a.subject, request: a.request }] : []));
}

/**
 * Issued, unanswered tasks: after a restart the service resends these (same task_id), never re-
 * decides them.
 */
export function pendingTaskRequests(state: CouncilRunState, subjectPrefix?: string): { subject: string; request: CouncilTaskRequest }[] {
  if (state.status !== 'running') return [];
  return state.task_order
    .map((id) => state.tasks[id])
    .filter((t) => t.status === 'issued')
    .map((t) => ({
      subject: councilTaskSubject(t.member_id, subjectPrefix),
      request: {
        run_id: state.run_id,
        task_id: t.task_id,
        stage: t.stage,
        role: t.role,
        deadline: t.deadline,
        goal_contract: state.goal_contract,
        inputs: t.inputs,
        ...(t.budget_remaining ? { budget_remaining: t.budget_remaining } : {}),
      },
    }));
}

/** When decideNext has something to do next without any member reply: the earliest deadline. */
export function nextWakeAt(state: CouncilRunState): string | null {
  if (state.status !== 'running') return null;
  const times = state.task_order
    .map((id) => state.tasks[id])
    .filter((t) => t.status === 'issued')
    .map((t) => instantMs(t.deadline, 'deadline'));
  times.push(runDeadlineMs(state));
  if (state.stage === 'frame-decision')
    times.push(instantMs(state.stage_opened_at, 'stage_opened_at') + stageTimeoutMs(state.policy, 'frame-decision'));
  return isoFromMs(Math.min(...times));
}

function envelope<T extends CouncilEvent['type'], D>(
  run: RunData,
  type: T,
  key: string,
  now: string,
  data: D,
  options: ControllerOptions,
): CouncilEventEnvelope<T, D> {
  return {
    event_id: options.eventId ? options.eventId(key) : key,
    type,
    schema_version: COUNCIL_EVENT_SCHEMA_VERSION,
    occurred_at: now,
    actor: run.policy.controller_id,
    causation_id: run.last_event_id,
    correlation_id: run.run_id,
    data,
  };
}

function terminate(
  run: RunData,
  now: string,
  terminal_state: TerminalState,
  reason: TerminationReason,
  options: ControllerOptions,
  note?: string,
): ControllerAction[] {
  const data: RunTerminated['data'] = {
    terminal_state,
    reason,
    best_checkpoint_id: decisionCheckpoint(run)?.checkpoint_id ?? null,
    decision_id: run.decision?.decision_record.decision_id ?? null,
  };
  if (note !== undefined) data.note = note;
  return [{ kind: 'Terminate', event: envelope(run, E.RunTerminated, `${run.run_id}:terminated`, now, data, options) }];
}

function closeStage(
  run: RunData,
  now: string,
  stage: CouncilStage,
  next_stage: CouncilStage,
  options: ControllerOptions,
  note?: string,
): ControllerAction {
  const data: StageClosed['data'] = { round: run.round, stage, next_stage };
  if (note !== undefined) data.note = note;
  return { kind: 'CloseStage', event: envelope(run, E.StageClosed, `${run.run_id}:${run.round}:${stage}:closed`, now, data, options) };
}

function issue(
  run: RunData,
  now: string,
  stage: TaskStage,
  memberId: string,
  inputs: Record<string, unknown>,
  options: ControllerOptions,
): ControllerAction {
  const task_id = councilTaskId(run.run_id, run.round, stage, memberId);
  const deadline = isoFromMs(Math.min(instantMs(now, 'now') + stageTimeoutMs(run.policy, stage), runDeadlineMs(run)));
  const role = TASK_STAGE_ROLE[stage];
  const budget_remaining = budgetRemaining(run, now);
  const request: CouncilTaskRequest = {
    run_id: run.run_id,
    task_id,
    stage,
    role,
    deadline,
    goal_contract: run.goal_contract,
    inputs,
    budget_remaining,
  };
  const event = envelope(
    run,
    E.TaskIssued,
    `${task_id}:issued`,
    now,
    { task_id, member_id: memberId, round: run.round, generation: run.generation, stage, role, deadline, inputs, budget_remaining },
    options,
  );
  return { kind: 'IssueTask', subject: councilTaskSubject(memberId, options.subjectPrefix), request, event };
}

type StageProgress = 'none' | 'pending' | 'settled';

function progress(run: RunData, stage: TaskStage): StageProgress {
  const tasks = tasksOf(run, run.round, stage);
  if (tasks.length === 0) return 'none';
  return tasks.some((t) => t.status === 'issued') ? 'pending' : 'settled';
}

function afterConflictMap(run: RunData): CouncilStage {
  return frameCheckDue(run) ? 'frame-check' : 'evaluate';
}

/** One step of the controller; [] means "wait for a member, a human or the clock". */
function nextStep(run: ActiveRun, now: string, options: ControllerOptions): ControllerAction[] {
  const nowMs = instantMs(now, 'now');

  // 17.1: hard limits first; they need no member's consent.
  const limit = checkHardLimits(run, now);
  if (limit) return terminate(run, now, 'budget-exhausted-best-checkpoint', limit, options);

  // Per-stage timeout: an unanswered task past its deadline is a member failure (18).
  const expired = run.task_order
    .map((id) => run.tasks[id])
    .filter((t) => t.status === 'issued' && instantMs(t.deadline, 'deadline') <= nowMs);
  if (expired.length) {
    return expired.map((t) => {
      const data: MemberFailed['data'] = { member_id: t.member_id, task_id: t.task_id, round: t.round, stage: t.stage, reason: 'timeout' };
      const refused = run.refusals.filter((r) => r.task_id === t.task_id);
      // A member that answered wrongly and never corrected it did not simply go silent.
      if (refused.length)
        data.detail = `${refused.length} refused answer(s), never corrected; last: ${refused[refused.length - 1].error.code}: ${refused[refused.length - 1].error.message}`;
      return { kind: 'RecordTimeout' as const, event: envelope(run, E.MemberFailed, `${t.task_id}:timed-out`, now, data, options) };
    });
  }

  // 18: below quorum, or an incomplete panel on a high-risk question, stops the run.
  const verdict = degradedVerdict(run);
  if (!verdict.continue) return terminate(run, now, 'failed-below-quorum', verdict.reason, options);

  const r = staged(run);
  switch (r.stage) {
    case 'proposal':
      return produceIndependentCandidates(r, now, options);
    case 'review':
      return reviewArtifacts(r, now, options);
    case 'conflict-map':
      return extractConflicts(r, now, options);
    case 'frame-check':
      return checkTheFrame(r, now, options);
    case 'frame-decision':
      return awaitFrameDecision(r, now, options);
    case 'evaluate':
      return evaluateTheRound(r, now, options);
    case 'revision':
      return reviseInParallel(r, now, options);
    case 'synthesis':
      return synthesize(r, now, options);
    default: {
      const _exhaustive: never = r;
      return _exhaustive;
    }
  }
}

/**
 * Spec 10 (lifecycle step 2): every standing proposer writes a candidate alone; the stage closes
 * with anonymous labels (11.1).
 */
function produceIndependentCandidates(run: RunInStage<'proposal'>, now: string, options: ControllerOptions): ControllerAction[] {
  const p = progress(run, 'proposal');
  if (p === 'none') {
    const proposers = activeMembersWithRole(run, 'proposer');
    if (proposers.length < run.policy.min_quorum) return terminate(run, now, 'failed-below-quorum', 'below-quorum', options);
    return proposers.map((m) => issue(run, now, 'proposal', m.member_id, proposalTaskInputs(run), options));
  }
  if (p === 'pending') return [];
  const ids = currentCandidateIds(run);
  if (ids.length < run.policy.min_quorum) {
    return terminate(run, now, 'failed-below-quorum', ids.length === 0 ? 'no-candidates' : 'below-quorum', options);
  }
  const unlabelled = ids.map((id) => run.lineages[run.candidates[id].lineage_id]).filter((l) => l.letter === undefined);
  const anonymization = assignAnonymousLabels(unlabelled, run.seed, run.anonymization.length);
  const data: ProposalStageClosed['data'] = {
    round: run.round,
    generation: run.generation,
    candidate_ids: ids,
    anonymization,
    next_stage: 'review',
  };
  return [
    {
      kind: 'CloseStage',
      event: envelope(run, E.ProposalStageClosed, `${run.run_id}:${run.round}:proposal:closed`, now, data, options),
    },
  ];
}

/**
 * Spec 11 (step 3): blind reviews of the others' candidates; the round's checkpoint is recorded
 * when they are in.
 */
function reviewArtifacts(run: RunInStage<'review'>, now: string, options: ControllerOptions): ControllerAction[] {
  const p = progress(run, 'review');
  const ids = currentCandidateIds(run);
  if (p === 'none') {
    const reviewers = activeMembersWithRole(run, 'reviewer').filter((m) => reviewTargetsFor(run, m.member_id, ids).length > 0);
    if (reviewers.length > 0)
      return reviewers.map((m) => issue(run, now, 'review', m.member_id, reviewTaskInputs(run, m.member_id, ids), options));
  } else if (p === 'pending') {
    return [];
  }
  const checkpoint = computeCheckpoint(run);
  return [
    {
      kind: 'RecordCheckpoint',
      event: envelope(run, E.CheckpointRecorded, `${run.run_id}:${run.round}:checkpoint`, now, { checkpoint }, options),
    },
    closeStage(run, now, 'review', 'conflict-map', options, p === 'none' ? 'no eligible reviewer' : undefined),
  ];
}

/**
 * Spec 8.5 (step 4): the moderator, or the chair when there is none, maps the conflicts over blind
 * refs.
 */
function extractConflicts(run: RunInStage<'conflict-map'>, now: string, options: ControllerOptions): ControllerAction[] {
  const p = progress(run, 'conflict-map');
  if (p === 'none') {
    const moderator =
      activeMembersWithRole(run, 'moderator')[0]?.member_id ?? run.chair_order.find((id) => !run.failed_members.includes(id));
    if (moderator === undefined)
      return [closeStage(run, now, 'conflict-map', afterConflictMap(run), options, 'no moderator or chair standing')];
    const ids = currentCandidateIds(run);
    // Member content is scrubbed (blindCandidate, blindReview); the controller's own words are not.
    const inputs = {
      candidates: ids.map((id) => blindCandidate(run, id)),
      reviews: run.review_order
        .filter((id) => run.reviews[id].round === run.round && run.reviews[id].generation === run.generation)
        .map((id) => blindReview(run, id)),
      conflict_types: [...CONFLICT_TYPES],
      instructions:
        'Return a ConflictMap; positions are candidate_refs; each conflict carries discriminating_evidence (or value_owner for a value conflict).',
    };
    return [issue(run, now, 'conflict-map', moderator, inputs, options)];
  }
  if (p === 'pending') return [];
  return [closeStage(run, now, 'conflict-map', afterConflictMap(run), options)];
}

/** Spec 13 (step 4): the frame observer's Inside-Outsider check, when one is due. */
function checkTheFrame(run: RunInStage<'frame-check'>, now: string, options: ControllerOptions): ControllerAction[] {
  const p = progress(run, 'frame-check');
  if (p === 'none') {
    const observer = activeMembersWithRole(run, 'frame-observer')[0];
    if (!observer) return [closeStage(run, now, 'frame-check', 'evaluate', options, 'no frame observer standing')];
    const ids = currentCandidateIds(run);
    const inputs = {
      candidates: ids.map((id) => blindCandidate(run, id)),
      instructions:
        'Run the Inside-Outsider check: return frame-holds, or frame-challenge with assumed_frame, excluded, evidence_refs or inference, reversal_signal, re_entry_action.',
    };
    return [issue(run, now, 'frame-check', observer.member_id, inputs, options)];
  }
  if (p === 'pending') return [];
  const challenged = openFrameChallenges(run).some((f) => f.goal_contract_id === run.goal_contract.goal_contract_id);
  return [closeStage(run, now, 'frame-check', challenged ? 'frame-decision' : 'evaluate', options)];
}

/** Spec 13: an open frame challenge waits for the owner or the chair until its stage timeout. */
function awaitFrameDecision(run: RunInStage<'frame-decision'>, now: string, options: ControllerOptions): ControllerAction[] {
  const nowMs = instantMs(now, 'now');
  if (openFrameChallenges(run).length === 0) return [closeStage(run, now, 'frame-decision', 'evaluate', options)];
  const due = instantMs(run.stage_opened_at, 'stage_opened_at') + stageTimeoutMs(run.policy, 'frame-decision');
  if (nowMs < due) return [];
  return [closeStage(run, now, 'frame-decision', 'evaluate', options, 'frame challenge not accepted by the deadline; retained as dissent')];
}

/** Spec 17 (step 7): quality signals decide between another revision round and synthesis. */
function evaluateTheRound(run: RunInStage<'evaluate'>, now: string, options: ControllerOptions): ControllerAction[] {
  const ev = evaluateRound(run);
  const data: RoundClosed['data'] = {
    round: run.round,
    signals: ev.signals,
    decision: ev.decision,
    best_checkpoint_id: ev.best_checkpoint_id,
    basis_candidate_ids: ev.basis_candidate_ids,
    open_issue_ids: ev.open_issue_ids,
  };
  if (ev.stop_reason !== undefined) data.stop_reason = ev.stop_reason;
  const closed: ControllerAction = {
    kind: 'CloseRound',
    event: envelope(run, E.RoundClosed, `${run.run_id}:${run.round}:round-closed`, now, data, options),
  };
  if (ev.decision === 'synthesize') return [closed];
  const nextRound = run.round + 1;
  return [
    closed,
    {
      kind: 'RequestRevision',
      event: envelope(
        run,
        E.RevisionRequested,
        `${run.run_id}:${nextRound}:revision-requested`,
        now,
        { round: nextRound, requests: ev.requests },
        options,
      ),
    },
  ];
}

/** Spec 12 (steps 5-6): each author standing revises against the issues selected for it. */
function reviseInParallel(run: RunInStage<'revision'>, now: string, options: ControllerOptions): ControllerAction[] {
  const p = progress(run, 'revision');
  if (p === 'none') {
    const requests = run.revision_requests.find((r) => r.round === run.round)?.requests ?? [];
    const standing = requests.filter((r) => !run.failed_members.includes(r.author_member_id));
    if (standing.length === 0) return [closeStage(run, now, 'revision', 'review', options, 'no author standing to revise')];
    return standing.map((r) => issue(run, now, 'revision', r.author_member_id, revisionTaskInputs(run, r), options));
  }
  if (p === 'pending') return [];
  return [closeStage(run, now, 'revision', 'review', options)];
}

/** Spec 14 (steps 9-10): the chair, or its authorised fallback, records the DecisionRecord. */
function synthesize(run: RunInStage<'synthesis'>, now: string, options: ControllerOptions): ControllerAction[] {
  if (run.decision) return terminate(run, now, deriveTerminalState(run), 'decision-recorded', options);
  if (tasksOf(run, run.round, 'synthesis').some((t) => t.status === 'issued')) return [];
  const chair = nextChair(run);
  // 18: Chair fails with no authorised fallback: return the artifacts, no false synthesis.
  if (chair === undefined)
    return terminate(
      run,
      now,
      'failed-below-quorum',
      'chair-failed-without-fallback',
      options,
      'artifacts and best checkpoint returned without synthesis',
    );
  const last = run.rounds[run.rounds.length - 1];
  const basis = last?.basis_candidate_ids.length ? last.basis_candidate_ids : currentCandidateIds(run);
  return [issue(run, now, 'synthesis', chair, synthesisTaskInputs(run, basis, last?.stop_reason), options)];
}
