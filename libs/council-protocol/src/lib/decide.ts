import { bridgeEscalates, parseAcpOrigin, valueChoiceOwners } from './acp-bridge';
import { parseCandidateArtifact } from './candidate-artifact';
import { checkDecisionGrounding, checkDissentRetained, withDegradedFacts } from './chair-and-synthesis';
import { parseConflictMap, unresolvedValueConflicts } from './conflict-map';
import { COUNCIL_COMMAND_TYPES as C, COUNCIL_EVENT_SCHEMA_VERSION, COUNCIL_EVENT_TYPES as E, levelNumber } from './contracts';
import type { ChairSelection } from './evaluation/chair-selection';
import { bestCheckpoint, terminalStateWithoutValueChoice } from './convergence-and-termination';
import { DecisionRecord, NO_DECISION, SYNTHESIS, parseDecisionRecord } from './decision-record';
import { parseStructuredOutcome } from './evaluation/outcomes';
import { CouncilError, CouncilErrorBody } from './errors';
import { CouncilEvent, CouncilEventEnvelope, DecisionBridged, Usage, ValueChoiceResolved } from './events';
import { artifactsRemainComparable, budgetChanged } from './frame-challenge';
import { parseFrameCheck } from './frame-check';
import { parseGoalContract, runDomain } from './goal-contract';
import { diversityProfile, holdsRole, memberRoles, parsePanel } from './member-descriptor';
import { parseCouncilPolicy } from './policy';
import { resolveArtifactRef, reviewTargetsFor } from './review-and-anonymity';
import { ReviewArtifact, parseReviewArtifact } from './review-artifact';
import { parseRevisionArtifact } from './revision-artifact';
import { authorOf, latestConflictMap } from './run-queries';
import { ActiveRun, CouncilRunState, RunData, StartedRun, TaskRecord } from './state';
import { checkRevisionAnswersSelectedIssues } from './targeted-revision';
import { clone, fail, instantMs, isRecord, join, num, record, str, strings } from './validation';

const BLIND_CANDIDATE_REF = /^anon-[A-Z]+-v\d+$/;

/** Commands (imperative). `now` is stamped by the edge from an injected clock. */
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

function envelope<T extends CouncilEvent['type'], D>(
  runId: string,
  type: T,
  eventId: string,
  now: string,
  actor: string,
  causation: string | null,
  data: D,
): CouncilEventEnvelope<T, D> {
  return {
    event_id: eventId,
    type,
    schema_version: COUNCIL_EVENT_SCHEMA_VERSION,
    occurred_at: now,
    actor,
    causation_id: causation,
    correlation_id: runId,
    data,
  };
}

function requireRunning(state: CouncilRunState): ActiveRun {
  if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', 'no such run');
  if (state.status === 'terminated') throw new CouncilError('INVALID_STATE', `run is terminated (${state.terminal.terminal_state})`);
  return state;
}

function parseUsage(value: unknown): Usage | undefined {
  if (value === undefined || value === null) return undefined;
  const o = record(value, 'usage');
  const u: Usage = {};
  if (o['cost'] !== undefined) u.cost = num(o, 'cost', 'usage', { min: 0 });
  if (o['tokens'] !== undefined) u.tokens = num(o, 'tokens', 'usage', { min: 0 });
  return u;
}

/**
 * The decider for everything that arrives from outside the controller: the start of a run,
 * member replies and failures, timeouts, goal-contract decisions, a human interrupt and later
 * outcomes. Returns the events to append or throws a CouncilError; never mutates state.
 */
export function decide(command: CouncilCommand, state: CouncilRunState): CouncilEvent[] {
  instantMs(command.now, 'now');
  switch (command.type) {
    case C.StartRun:
      return decideStartRun(command, state);
    case C.SubmitTaskResult:
      return decideSubmitTaskResult(command, state);
    case C.ReportTaskFailure:
      return decideReportTaskFailure(command, state);
    case C.RecordRefusedAnswer:
      return decideRecordRefusedAnswer(command, state);
    case C.ExpireTask:
      return decideExpireTask(command, state);
    case C.ReviseGoalContract:
      return decideReviseGoalContract(command, state);
    case C.DeclineFrameChallenge:
      return decideDeclineFrameChallenge(command, state);
    case C.InterruptRun:
      return decideInterruptRun(command, state);
    case C.RecordOutcome:
      return decideRecordOutcome(command, state);
    case C.RecordStructuredOutcome:
      return decideRecordStructuredOutcome(command, state);
    case C.RecordDecisionBridge:
      return decideRecordDecisionBridge(command, state);
    case C.ResolveValueChoice:
      return decideResolveValueChoice(command, state);
    default: {
      const _exhaustive: never = command;
      throw new CouncilError('SCHEMA_VIOLATION', `unknown command ${(_exhaustive as { type: string }).type}`, 'type');
    }
  }
}

export function decideStartRun(command: StartRun, state: CouncilRunState): CouncilEvent[] {
  if (state.status !== 'empty') {
    if (command.event_id !== undefined && state.applied_event_ids[command.event_id]) return [];
    throw new CouncilError('RUN_ALREADY_STARTED', `run ${state.run_id} already started`);
  }
  if (typeof command.run_id !== 'string' || !/^[A-Za-z0-9_.:-]+$/.test(command.run_id))
    fail('run_id', 'must be a non-empty id of [A-Za-z0-9_.:-]');
  if (typeof command.seed !== 'string' || command.seed === '') fail('seed', 'must be a non-empty string');
  const goal_contract = parseGoalContract(command.goal_contract, 'goal_contract');
  const panel = parsePanel(command.panel, 'panel');
  const policy = parseCouncilPolicy(command.policy, 'policy');
  // The run is the decision owner's: nobody starts a council in someone else's name.
  if (command.actor !== goal_contract.decision_owner) {
    throw new CouncilError(
      'NOT_AUTHORIZED_ROLE',
      `only the decision owner (${goal_contract.decision_owner}) starts a run on this GoalContract`,
      'goal_contract.decision_owner',
    );
  }
  // Controller is not Chair (7.1): the controller is never a panel member.
  if (panel.some((m) => m.member_id === policy.controller_id)) {
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'the controller must not be a panel member', 'policy.controller_id');
  }
  const proposers = panel.filter((m) => holdsRole(m, 'proposer'));
  if (proposers.length < policy.min_quorum) {
    throw new CouncilError('BELOW_QUORUM', `${proposers.length} proposer(s) for a quorum of ${policy.min_quorum}`, 'panel');
  }
  if (levelNumber(policy.level) >= 4 && goal_contract.domain === undefined)
    fail('goal_contract.domain', `${policy.level} scopes capability by domain: the GoalContract needs one`);
  const acp_origin = command.acp_origin === undefined ? undefined : parseAcpOrigin(command.acp_origin);
  if (acp_origin) {
    // The proposal's author asked, and ACP checked its grant in the proposal's domain: the run
    // is that author's and decides there, so the bridge never posts where the author could not.
    if (acp_origin.author !== command.actor)
      throw new CouncilError('NOT_AUTHORIZED_ROLE', 'a council started from ACP is started by the proposal’s author', 'acp_origin.author');
    if (runDomain(goal_contract) !== acp_origin.domain)
      throw new CouncilError(
        'NOT_AUTHORIZED_ROLE',
        `a council started from an ACP proposal in ${acp_origin.domain} decides in that domain`,
        'goal_contract.domain',
      );
  }
  const selection = command.chair_selection;
  if (selection !== undefined && policy.chair_order.length > 0)
    fail('policy.chair_order', 'a chair selection policy and an explicit chair_order exclude each other');
  if (selection !== undefined && selection.chair_order.length === 0) throw new CouncilError('SCHEMA_VIOLATION', selection.reason, 'panel');
  const chairs = selection
    ? selection.chair_order
    : policy.chair_order.length
      ? policy.chair_order
      : panel.filter((m) => holdsRole(m, 'chair')).map((m) => m.member_id);
  chairs.forEach((id, i) => {
    const m = panel.find((x) => x.member_id === id);
    if (!m || !holdsRole(m, 'chair'))
      throw new CouncilError('NOT_AUTHORIZED_ROLE', `${id} is not a panel member holding the chair role`, `policy.chair_order[${i}]`);
  });
  if (chairs.length === 0) throw new CouncilError('SCHEMA_VIOLATION', 'the panel needs a member holding the chair role', 'panel');
  const runId = command.run_id;
  const started = envelope(runId, E.RunStarted, command.event_id ?? `${runId}:started`, command.now, command.actor, null, {
    run_id: runId,
    goal_contract,
    panel,
    policy: { ...policy, chair_order: chairs },
    seed: command.seed,
    ...(selection ? { chair_selection: selection } : {}),
    ...(acp_origin ? { acp_origin } : {}),
  });
  const roles = Object.fromEntries(panel.map((m) => [m.member_id, [...memberRoles(m)]]));
  const assembled = envelope(runId, E.PanelAssembled, `${runId}:panel-assembled`, command.now, policy.controller_id, started.event_id, {
    diversity_profile: diversityProfile(panel),
    chair_order: chairs,
    roles,
  });
  return [started, assembled];
}

/** A task the command may settle: exists, is the member's, is still open and in time. */
function openTask(run: RunData, taskId: string, memberId: string | undefined, eventId: string): TaskRecord | null {
  const task = run.tasks[taskId];
  if (!task) throw new CouncilError('TASK_NOT_FOUND', `no task ${taskId}`, 'task_id');
  if (memberId !== undefined && task.member_id !== memberId)
    throw new CouncilError('NOT_TASK_ASSIGNEE', `task ${taskId} belongs to another member`, 'member_id');
  if (task.status !== 'issued') {
    // A redelivered reply (same event id) is a no-op, not an error.
    if (task.settled_by === eventId) return null;
    throw new CouncilError('TASK_ALREADY_SETTLED', `task ${taskId} is ${task.status}`, 'task_id');
  }
  return task;
}

function reviewsIn(artifact: unknown): unknown[] {
  if (Array.isArray(artifact)) return artifact;
  if (isRecord(artifact) && Array.isArray(artifact['reviews'])) return artifact['reviews'];
  return [artifact];
}

export function decideSubmitTaskResult(command: SubmitTaskResult, state: CouncilRunState): CouncilEvent[] {
  const run = requireRunning(state);
  const eventId = command.event_id ?? `${command.task_id}:result`;
  const task = openTask(run, command.task_id, command.member_id, eventId);
  if (task === null) return [];
  if (instantMs(command.now, 'now') > instantMs(task.deadline, 'deadline')) {
    throw new CouncilError('INVALID_STATE', `task ${task.task_id} passed its deadline ${task.deadline}`, 'task_id');
  }
  const usage = parseUsage(command.usage);
  const withUsage = <D extends object>(d: D): D & { usage?: Usage } => (usage ? { ...d, usage } : d);
  const member = command.member_id;
  const ev = <T extends CouncilEvent['type'], D>(type: T, data: D, actor = member) =>
    envelope(run.run_id, type, eventId, command.now, actor, task.task_id, data);

  switch (task.stage) {
    case 'proposal': {
      const candidate = parseCandidateArtifact(command.artifact);
      if (candidate.author_member_id !== member)
        throw new CouncilError('NOT_AUTHORIZED_ROLE', 'a candidate is authored by the member that submits it', 'author_member_id');
      if (candidate.version !== 1 || candidate.parent_candidate_id !== null)
        throw new CouncilError('LINEAGE_MISMATCH', 'an initial candidate has version 1 and no parent', 'parent_candidate_id');
      if (run.candidates[candidate.candidate_id])
        throw new CouncilError('DUPLICATE_ARTIFACT', `candidate ${candidate.candidate_id} already exists`, 'candidate_id');
      return [ev(E.CandidateSubmitted, withUsage({ task_id: task.task_id, member_id: member, candidate }))];
    }
    case 'review': {
      const items = reviewsIn(command.artifact);
      if (items.length === 0) fail('reviews', 'must contain at least one review');
      const targets = new Set(reviewTargetsFor(run, member, taskTargetIds(run, task)));
      const seen = new Set<string>();
      const single = !Array.isArray(command.artifact) && !(isRecord(command.artifact) && Array.isArray(command.artifact['reviews']));
      const reviews: ReviewArtifact[] = items.map((item, i) => {
        const path = single ? '' : `reviews[${i}]`;
        const review = parseReviewArtifact(item, path);
        if (review.reviewer_member_id !== member)
          throw new CouncilError(
            'NOT_AUTHORIZED_ROLE',
            'a review is written by the member that submits it',
            join(path, 'reviewer_member_id'),
          );
        const target = resolveArtifactRef(run, review.target_candidate_id);
        if (target === undefined || !run.candidates[target])
          throw new CouncilError(
            'UNKNOWN_REFERENCE',
            `${review.target_candidate_id} is not a candidate of this run`,
            join(path, 'target_candidate_id'),
          );
        // 11.3: a proposer never scores its own candidate.
        if (authorOf(run, target) === member)
          throw new CouncilError('SELF_REVIEW', 'a member cannot review its own candidate', join(path, 'target_candidate_id'));
        if (!targets.has(target))
          throw new CouncilError(
            'UNKNOWN_REFERENCE',
            `${review.target_candidate_id} was not given to this reviewer`,
            join(path, 'target_candidate_id'),
          );
        if (run.reviews[review.review_id] || seen.has(review.review_id))
          throw new CouncilError('DUPLICATE_ARTIFACT', `review ${review.review_id} already exists`, join(path, 'review_id'));
        seen.add(review.review_id);
        const resolved: ReviewArtifact = { ...review, target_candidate_id: target };
        if (review.ranking) {
          resolved.ranking = review.ranking.map((ref, j) => {
            const id = resolveArtifactRef(run, ref);
            if (id === undefined || !targets.has(id))
              throw new CouncilError('UNKNOWN_REFERENCE', `${ref} is not a candidate given to this reviewer`, join(path, `ranking[${j}]`));
            return id;
          });
        }
        if (review.blind_spot_candidate !== undefined) {
          // A candidate ref is stored as the real id; free text naming a blind spot stays text.
          const id = resolveArtifactRef(run, review.blind_spot_candidate);
          if (id !== undefined && run.candidates[id]) resolved.blind_spot_candidate = id;
          else if (BLIND_CANDIDATE_REF.test(review.blind_spot_candidate)) {
            throw new CouncilError(
              'UNKNOWN_REFERENCE',
              `${review.blind_spot_candidate} is not a candidate of this run`,
              join(path, 'blind_spot_candidate'),
            );
          }
        }
        return resolved;
      });
      return [ev(E.ReviewSubmitted, withUsage({ task_id: task.task_id, member_id: member, reviews }))];
    }
    case 'conflict-map': {
      const map = parseConflictMap(command.artifact);
      map.conflicts.forEach((c, i) => {
        c.positions = c.positions.map((p, j) => {
          const id = resolveArtifactRef(run, p);
          if (id === undefined)
            throw new CouncilError('UNKNOWN_REFERENCE', `${p} is not an artifact of this run`, `conflicts[${i}].positions[${j}]`);
          return id;
        });
      });
      return [ev(E.ConflictMapRecorded, withUsage({ task_id: task.task_id, member_id: member, conflict_map: map }))];
    }
    case 'frame-check': {
      const fc = parseFrameCheck(command.artifact);
      if (fc.observer_member_id !== member)
        throw new CouncilError('NOT_AUTHORIZED_ROLE', 'a frame check is written by the member that submits it', 'observer_member_id');
      if (run.frame_checks.some((f) => f.frame_check.frame_check_id === fc.frame_check_id))
        throw new CouncilError('DUPLICATE_ARTIFACT', `frame check ${fc.frame_check_id} exists`, 'frame_check_id');
      return [
        ev(
          E.FrameCheckRecorded,
          withUsage({ task_id: task.task_id, member_id: member, frame_check: fc, goal_contract_id: run.goal_contract.goal_contract_id }),
        ),
      ];
    }
    case 'revision': {
      const revision = parseRevisionArtifact(command.artifact);
      revision.responses = revision.responses.map((r, i) => {
        const id = resolveArtifactRef(run, r.review_issue);
        if (id === undefined || !id.includes('#issue-'))
          throw new CouncilError('UNKNOWN_REFERENCE', `no review issue ${r.review_issue} in this run`, `responses[${i}].review_issue`);
        return { ...r, review_issue: id };
      });
      const request = run.revision_requests.find((r) => r.round === task.round)?.requests.find((r) => r.author_member_id === member);
      if (!request) throw new CouncilError('INVALID_STATE', 'no revision was requested from this member');
      checkRevisionAnswersSelectedIssues(run, revision, request, member);
      return [ev(E.RevisionSubmitted, withUsage({ task_id: task.task_id, member_id: member, revision }))];
    }
    case 'synthesis': {
      if (!run.chair_order.includes(member))
        throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the chair or its authorised fallback records a decision', 'member_id');
      const parsed = parseDecisionRecord(command.artifact);
      const grounded = checkDecisionGrounding(run, parsed);
      checkDissentRetained(run, grounded);
      return [
        ev(
          E.ChairDecisionRecorded,
          withUsage({ task_id: task.task_id, chair_member_id: member, decision_record: withDegradedFacts(run, grounded) }),
        ),
      ];
    }
    default: {
      const _exhaustive: never = task.stage;
      return _exhaustive;
    }
  }
}

/** The real candidate ids a review task showed (from its blind refs). */
function taskTargetIds(run: RunData, task: TaskRecord): string[] {
  const shown = Array.isArray(task.inputs['candidates']) ? (task.inputs['candidates'] as { candidate_ref?: string }[]) : [];
  return shown
    .map((c) => (c.candidate_ref ? resolveArtifactRef(run, c.candidate_ref) : undefined))
    .filter((id): id is string => id !== undefined);
}

export function decideReportTaskFailure(command: ReportTaskFailure, state: CouncilRunState): CouncilEvent[] {
  const run = requireRunning(state);
  const eventId = command.event_id ?? `${command.task_id}:failed`;
  const task = openTask(run, command.task_id, command.member_id, eventId);
  if (task === null) return [];
  const usage = parseUsage(command.usage);
  const data = {
    member_id: task.member_id,
    task_id: task.task_id,
    round: task.round,
    stage: task.stage,
    reason: 'reported-failure' as const,
    ...(command.detail ? { detail: command.detail } : {}),
    ...(usage ? { usage } : {}),
  };
  return [envelope(run.run_id, E.MemberFailed, eventId, command.now, task.member_id, task.task_id, data)];
}

/** Refusals recorded per task; past this a member's further wrong answers are not appended (no log flooding). */
export const MAX_REFUSALS_PER_TASK = 5;

/**
 * A refused answer is a fact of the run (checklist 14): the RunRecord keeps it, and its spend
 * counts against the budget (17.1), whether the task is still open, timed out or answered by a
 * later correction. The event id counts the task's refusals, so a retried append is dropped.
 */
export function decideRecordRefusedAnswer(command: RecordRefusedAnswer, state: CouncilRunState): CouncilEvent[] {
  const run = requireRunning(state);
  const task = run.tasks[command.task_id];
  if (!task) throw new CouncilError('TASK_NOT_FOUND', `no task ${command.task_id}`, 'task_id');
  if (task.member_id !== command.member_id)
    throw new CouncilError('NOT_TASK_ASSIGNEE', `task ${command.task_id} belongs to another member`, 'member_id');
  if (command.event_id !== undefined && run.applied_event_ids[command.event_id]) return [];
  const count = run.refusals.filter((r) => r.task_id === task.task_id).length;
  if (count >= MAX_REFUSALS_PER_TASK)
    throw new CouncilError('INVALID_STATE', `task ${task.task_id} already has ${count} refused answers`, 'task_id');
  const e = command.error;
  if (!e || typeof e.code !== 'string' || typeof e.message !== 'string') fail('error', 'must be {code, message, field?}');
  const usage = parseUsage(command.usage);
  const data = {
    task_id: task.task_id,
    member_id: task.member_id,
    round: task.round,
    stage: task.stage,
    error: { code: e.code, message: e.message, ...(e.field !== undefined ? { field: e.field } : {}) },
    ...(usage ? { usage } : {}),
  };
  return [
    envelope(
      run.run_id,
      E.TaskAnswerRefused,
      command.event_id ?? `${task.task_id}:refused:${count + 1}`,
      command.now,
      task.member_id,
      task.task_id,
      data,
    ),
  ];
}

/** A per-stage timeout from outside (a sweeper); same event id as the controller's, so never twice. */
export function decideExpireTask(command: ExpireTask, state: CouncilRunState): CouncilEvent[] {
  const run = requireRunning(state);
  const eventId = command.event_id ?? `${command.task_id}:timed-out`;
  const task = openTask(run, command.task_id, undefined, eventId);
  if (task === null) return [];
  if (instantMs(command.now, 'now') < instantMs(task.deadline, 'deadline'))
    throw new CouncilError('TASK_NOT_DUE', `task ${task.task_id} is due at ${task.deadline}`, 'now');
  const data = { member_id: task.member_id, task_id: task.task_id, round: task.round, stage: task.stage, reason: 'timeout' as const };
  return [envelope(run.run_id, E.MemberFailed, eventId, command.now, run.policy.controller_id, task.task_id, data)];
}

function requireOwnerOrChair(run: RunData, actor: string): 'owner' | 'chair' {
  if (actor === run.goal_contract.decision_owner) return 'owner';
  if (run.chair_order.includes(actor)) return 'chair';
  throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the decision owner or the chair decides on the GoalContract', 'actor');
}

/**
 * An accepted frame challenge (or an owner's realignment) revises the GoalContract. The chair
 * may reframe but never touch budgets or ownership (7.1); the controller alone judges whether
 * the old artifacts remain comparable, and restarts the proposal stage when they do not.
 */
export function decideReviseGoalContract(command: ReviseGoalContract, state: CouncilRunState): CouncilEvent[] {
  const run = requireRunning(state);
  if (command.event_id !== undefined && run.applied_event_ids[command.event_id]) return [];
  const who = requireOwnerOrChair(run, command.actor);
  if (run.stage === 'synthesis') throw new CouncilError('INVALID_STATE', 'the GoalContract cannot change while the chair is deciding');
  const revised = parseGoalContract(command.goal_contract, 'goal_contract');
  const previous = run.goal_contract;
  if (run.goal_contract_revisions.some((g) => g.goal_contract.goal_contract_id === revised.goal_contract_id)) {
    fail('goal_contract.goal_contract_id', 'a revision carries a new goal_contract_id');
  }
  if (who !== 'owner' && budgetChanged(previous, revised)) {
    throw new CouncilError(
      'NOT_AUTHORIZED_ROLE',
      'only the decision owner changes the budget; the chair cannot extend the run',
      'goal_contract.budget',
    );
  }
  if (who !== 'owner' && revised.decision_owner !== previous.decision_owner) {
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the decision owner reassigns ownership', 'goal_contract.decision_owner');
  }
  let frameCheckId: string | null = null;
  if (command.frame_check_id !== undefined) {
    const fc = run.frame_checks.find((f) => f.frame_check.frame_check_id === command.frame_check_id);
    if (!fc) throw new CouncilError('UNKNOWN_REFERENCE', `no frame check ${command.frame_check_id}`, 'frame_check_id');
    if (fc.status !== 'open')
      throw new CouncilError('INVALID_STATE', `frame check ${command.frame_check_id} is ${fc.status}`, 'frame_check_id');
    frameCheckId = command.frame_check_id;
  }
  const comparable = artifactsRemainComparable(previous, revised);
  if (who === 'chair' && frameCheckId === null) {
    throw new CouncilError(
      'NOT_AUTHORIZED_ROLE',
      'the chair revises the GoalContract only to accept an open frame challenge; the owner revises it otherwise',
      'frame_check_id',
    );
  }
  if (who === 'chair' && !comparable) {
    // A restart spends the run's rounds: a model cannot buy itself more rounds (7.1).
    throw new CouncilError(
      'NOT_AUTHORIZED_ROLE',
      "a revision that makes the artifacts incomparable is the decision owner's to accept",
      'goal_contract',
    );
  }
  const roundLeft = run.round < revised.budget.max_rounds;
  const data = {
    goal_contract: revised,
    previous_goal_contract_id: previous.goal_contract_id,
    frame_check_id: frameCheckId,
    revised_by: command.actor,
    comparable,
    restart: !comparable && roundLeft,
    ...(!comparable && !roundLeft
      ? { note: 'artifacts not comparable and no round left to restart; the decision must retain the challenge' }
      : {}),
  };
  return [
    envelope(
      run.run_id,
      E.GoalContractRevised,
      command.event_id ?? `${run.run_id}:goal-contract:${revised.goal_contract_id}`,
      command.now,
      command.actor,
      frameCheckId,
      data,
    ),
  ];
}

export function decideDeclineFrameChallenge(command: DeclineFrameChallenge, state: CouncilRunState): CouncilEvent[] {
  const run = requireRunning(state);
  if (command.event_id !== undefined && run.applied_event_ids[command.event_id]) return [];
  requireOwnerOrChair(run, command.actor);
  if (typeof command.reason !== 'string' || command.reason.trim() === '') fail('reason', 'a declined challenge needs a reason');
  const fc = run.frame_checks.find((f) => f.frame_check.frame_check_id === command.frame_check_id);
  if (!fc) throw new CouncilError('UNKNOWN_REFERENCE', `no frame check ${command.frame_check_id}`, 'frame_check_id');
  if (fc.status !== 'open')
    throw new CouncilError('INVALID_STATE', `frame check ${command.frame_check_id} is ${fc.status}`, 'frame_check_id');
  return [
    envelope(
      run.run_id,
      E.FrameChallengeDeclined,
      command.event_id ?? `${command.frame_check_id}:declined`,
      command.now,
      command.actor,
      command.frame_check_id,
      {
        frame_check_id: command.frame_check_id,
        declined_by: command.actor,
        reason: command.reason,
      },
    ),
  ];
}

/** The human-interrupt boundary (17.1): stop now, keep the best checkpoint, record why. */
export function decideInterruptRun(command: InterruptRun, state: CouncilRunState): CouncilEvent[] {
  if (state.status === 'terminated' && command.event_id !== undefined && state.applied_event_ids[command.event_id]) return [];
  const run = requireRunning(state);
  if (typeof command.reason !== 'string' || command.reason.trim() === '') fail('reason', 'an interrupt states its reason');
  if (typeof command.actor !== 'string' || command.actor.trim() === '') fail('actor', 'an interrupt names who interrupted');
  // The human-interrupt boundary (17.1) is the owner's, not a member's or a bystander's.
  if (command.actor !== run.goal_contract.decision_owner)
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the decision owner interrupts the run', 'actor');
  return [
    envelope(run.run_id, E.RunTerminated, command.event_id ?? `${run.run_id}:terminated`, command.now, command.actor, run.last_event_id, {
      terminal_state: 'budget-exhausted-best-checkpoint' as const,
      reason: 'human-interrupt' as const,
      best_checkpoint_id: bestCheckpoint(run)?.checkpoint_id ?? null,
      decision_id: null,
      note: command.reason,
    }),
  ];
}

/** Later outcome feedback (8.7, 15.4): appended to a finished (or running) run. */
export function decideRecordOutcome(command: RecordOutcome, state: CouncilRunState): CouncilEvent[] {
  if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', 'no such run');
  const run: StartedRun = state;
  if (command.actor !== run.goal_contract.decision_owner)
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the decision owner records outcomes of its decision', 'actor');
  const o = record(command.outcome, 'outcome');
  const outcome = {
    outcome_id: str(o, 'outcome_id', 'outcome'),
    observed_at: str(o, 'observed_at', 'outcome'),
    summary: str(o, 'summary', 'outcome'),
    source: str(o, 'source', 'outcome'),
    evidence_refs: strings(o, 'evidence_refs', 'outcome', { optional: true }),
  };
  instantMs(outcome.observed_at, 'outcome.observed_at');
  const eventId = command.event_id ?? `${run.run_id}:outcome:${outcome.outcome_id}`;
  if (run.applied_event_ids[eventId]) return [];
  if (run.outcomes.some((x) => x.outcome_id === outcome.outcome_id))
    throw new CouncilError('DUPLICATE_ARTIFACT', `outcome ${outcome.outcome_id} exists`, 'outcome.outcome_id');
  return [envelope(run.run_id, E.OutcomeRecorded, eventId, command.now, command.actor, null, outcome)];
}

/** Expected outcomes of the candidates the decision selected or incorporated (8.2): what an outcome reports on. */
function decidedExpectations(run: RunData, decision: DecisionRecord): string[] {
  const picked = [
    ...(decision.selected_path === NO_DECISION || decision.selected_path === SYNTHESIS ? [] : [decision.selected_path]),
    ...decision.incorporated,
  ];
  return [...new Set(picked.flatMap((id) => run.candidates[id]?.candidate.expected_outcomes ?? []))];
}

/**
 * council:L5 outcome feedback (8.7, 15.4): a structured outcome linked to the run's decision, by
 * its decision owner or an evaluator the policy names; `recorded_by` is whoever records it (a
 * body naming someone else is refused). It becomes OutcomeRecorded with the structured outcome,
 * which the capability projection and calibration read.
 */
export function decideRecordStructuredOutcome(command: RecordStructuredOutcome, state: CouncilRunState): CouncilEvent[] {
  if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', 'no such run');
  const run: StartedRun = state;
  const decision = run.decision?.decision_record;
  if (!decision) throw new CouncilError('INVALID_STATE', 'the run has no DecisionRecord to record an outcome of', 'run_id');
  const body = record(command.outcome, 'outcome');
  if (body['recorded_by'] !== undefined && body['recorded_by'] !== command.actor)
    throw new CouncilError(
      'NOT_AUTHORIZED_ROLE',
      `the outcome is recorded by ${command.actor}, not in another's name`,
      'outcome.recorded_by',
    );
  const structured = parseStructuredOutcome(
    { ...body, recorded_by: command.actor },
    { decision, expected_outcomes: decidedExpectations(run, decision), evaluators: run.policy.evaluators ?? [] },
  );
  const eventId = command.event_id ?? `${run.run_id}:outcome:${structured.outcome_id}`;
  if (run.applied_event_ids[eventId]) return [];
  if (run.outcomes.some((x) => x.outcome_id === structured.outcome_id))
    throw new CouncilError('DUPLICATE_ARTIFACT', `outcome ${structured.outcome_id} exists`, 'outcome.outcome_id');
  return [
    envelope(run.run_id, E.OutcomeRecorded, eventId, command.now, command.actor, null, {
      outcome_id: structured.outcome_id,
      observed_at: structured.observed_at,
      summary: structured.summary,
      source: structured.source_kind,
      evidence_refs: structured.evidence_refs,
      structured,
    }),
  ];
}

/**
 * The bridge (an extension): the run's decision is in ACP. Only an ended run with a DecisionRecord
 * is posted, on the request of its decision owner (by a signed command, or by the ACP proposal
 * that started the run); a run is posted once, so a retry of the same post is a no-op.
 */
export function decideRecordDecisionBridge(command: RecordDecisionBridge, state: CouncilRunState): CouncilEvent[] {
  if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', 'no such run');
  const run: StartedRun = state;
  const b = command.bridge;
  const eventId = command.event_id ?? `${run.run_id}:decision-bridged`;
  if (run.acp_bridge) {
    if (run.acp_bridge.proposal_id === b.proposal_id && run.acp_bridge.observation_id === b.observation_id) return [];
    throw new CouncilError('INVALID_STATE', `the decision is already in ACP as ${run.acp_bridge.proposal_id}`, 'run_id');
  }
  if (run.applied_event_ids[eventId]) return [];
  if (run.status !== 'terminated' || !run.decision)
    throw new CouncilError('INVALID_STATE', 'only an ended run with a DecisionRecord is posted to ACP', 'run_id');
  if (b.requested_by !== run.goal_contract.decision_owner)
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the decision owner posts its decision to ACP', 'requested_by');
  if (b.authorised_by.kind === 'acp-origin' && b.authorised_by.proposal_id !== run.acp_origin?.proposal_id)
    throw new CouncilError('UNKNOWN_REFERENCE', 'the run was not started by that ACP proposal', 'authorised_by.proposal_id');
  if (b.domain !== runDomain(run.goal_contract))
    throw new CouncilError('INVALID_STATE', `the run decides in ${runDomain(run.goal_contract)}`, 'domain');
  if (b.escalated !== bridgeEscalates(run))
    throw new CouncilError('INVALID_STATE', 'a run is escalated to its owner exactly when a value choice is open', 'escalated');
  return [envelope(run.run_id, E.DecisionBridged, eventId, command.now, b.requested_by, null, clone(b))];
}

/**
 * The decision owner's value choice (8.5: value conflicts return to the human owner), from the
 * resolution of the ACP escalation of the run's bridged proposal. Only the owner, or a value
 * owner an open value conflict names, makes it, and only once. `approved` adopts the council's
 * DecisionRecord: the run is then decided like any other (terminalStateWithoutValueChoice).
 * `rejected` declines it: the run stays `needs-human-value-choice`, the choice recorded.
 */
export function decideResolveValueChoice(command: ResolveValueChoice, state: CouncilRunState): CouncilEvent[] {
  if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', 'no such run');
  const run: StartedRun = state;
  const eventId = command.event_id ?? `${run.run_id}:value-choice`;
  if (run.applied_event_ids[eventId]) return [];
  if (run.value_choice) throw new CouncilError('INVALID_STATE', `the value choice was made by ${run.value_choice.chosen_by}`, 'run_id');
  if (run.status !== 'terminated' || run.terminal.terminal_state !== 'needs-human-value-choice')
    throw new CouncilError('INVALID_STATE', 'only a run that ended needs-human-value-choice takes a value choice', 'run_id');
  // The choice comes from the escalation of this run's own bridged proposal, nothing else.
  if (!run.acp_bridge?.escalated || run.acp_bridge.proposal_id !== command.acp_proposal_id)
    throw new CouncilError(
      'UNKNOWN_REFERENCE',
      `${command.acp_proposal_id} is not the escalated proposal of run ${run.run_id}`,
      'acp_proposal_id',
    );
  if (typeof command.acp_event_id !== 'string' || command.acp_event_id === '') fail('acp_event_id', 'must name the resolution event');
  const owners = valueChoiceOwners(run);
  if (!owners.includes(command.chosen_by))
    throw new CouncilError('NOT_AUTHORIZED_ROLE', `the value choice is ${owners.join(' or ')}’s, not ${command.chosen_by}’s`, 'chosen_by');
  const outcome = command.outcome;
  if (outcome !== 'approved' && outcome !== 'rejected') fail('outcome', 'must be approved | rejected');
  if (command.note !== null && command.note !== undefined && typeof command.note !== 'string') fail('note', 'must be a string');
  if (outcome === 'approved' && (!run.decision || run.decision.decision_record.selected_path === NO_DECISION))
    throw new CouncilError('INVALID_STATE', 'the council selected no path to adopt', 'outcome');
  const terminal_state = outcome === 'approved' ? terminalStateWithoutValueChoice(run) : run.terminal.terminal_state;
  const data: ValueChoiceResolved['data'] = {
    outcome,
    chosen_by: command.chosen_by,
    note: typeof command.note === 'string' ? command.note : '',
    conflict_ids: unresolvedValueConflicts(latestConflictMap(run)).map((c) => c.conflict_id),
    previous_terminal_state: run.terminal.terminal_state,
    terminal_state,
    source: { acp_proposal_id: command.acp_proposal_id, acp_event_id: command.acp_event_id },
  };
  return [envelope(run.run_id, E.ValueChoiceResolved, eventId, command.now, command.chosen_by, command.acp_event_id, data)];
}
