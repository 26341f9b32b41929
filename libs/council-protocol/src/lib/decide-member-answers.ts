import { checkDecisionGrounding, checkDissentRetained, checkTestEliminations, withDegradedFacts } from './chair-and-synthesis';
import { parseCandidateArtifact } from './candidate-artifact';
import { SubmitTaskResult } from './commands';
import { parseConflictMap } from './conflict-map';
import { COUNCIL_EVENT_TYPES as E, TaskStage } from './contracts';
import { parseDecisionRecord } from './decision-record';
import { envelope, openTask, parseUsage, requireRunning, settledBefore } from './decide-support';
import { CouncilError } from './errors';
import { CouncilEvent, CouncilEventEnvelope, Usage } from './events';
import { parseFrameCheck } from './frame-check';
import { resolveArtifactRef, reviewTargetsFor } from './review-and-anonymity';
import { ReviewArtifact, parseReviewArtifact } from './review-artifact';
import { parseRevisionArtifact } from './revision-artifact';
import { authorOf } from './run-queries';
import { ActiveRun, CouncilRunState, RunData, TaskRecord } from './state';
import { checkRevisionAnswersSelectedIssues } from './targeted-revision';
import { fail, instantMs, isRecord, join } from './validation';

const BLIND_CANDIDATE_REF = /^anon-[A-Z]+-v\d+$/;

/**
 * A member's answer to an open task of the run, with the helpers that record it as the task's
 * result.
 */
interface Answer {
  run: ActiveRun;
  task: TaskRecord;
  member: string;
  command: SubmitTaskResult;
  withUsage<D extends object>(d: D): D & { usage?: Usage };
  ev<T extends CouncilEvent['type'], D>(type: T, data: D): CouncilEventEnvelope<T, D>;
}

/** Each task stage's rule for its answer, by the spec section that states it. */
const ANSWER_RULES: Record<TaskStage, (a: Answer) => CouncilEvent[]> = {
  proposal: acceptIndependentProposal,
  review: acceptReviews,
  'conflict-map': acceptConflictMap,
  'frame-check': acceptFrameCheck,
  revision: acceptTargetedRevision,
  synthesis: acceptChairDecision,
};

/**
 * A member's answer to its task: the task must be the member's, open and in time; the artifact
 * is then judged by the rule of the task's stage. A redelivered answer (same event id) is a no-op.
 */
export function decideSubmitTaskResult(command: SubmitTaskResult, state: CouncilRunState): CouncilEvent[] {
  const eventId = command.event_id ?? `${command.task_id}:result`;
  if (settledBefore(state, command.task_id, command.member_id, eventId)) return [];
  const run = requireRunning(state);
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
  return ANSWER_RULES[task.stage]({ run, task, member, command, ev, withUsage });
}

/**
 * Spec 10, independent proposal: a version-1 candidate by the member that submits it, with no
 * parent.
 */
function acceptIndependentProposal(a: Answer): CouncilEvent[] {
  const { run, task, member, command, ev, withUsage } = a;
  const candidate = parseCandidateArtifact(command.artifact);
  if (candidate.author_member_id !== member)
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'a candidate is authored by the member that submits it', 'author_member_id');
  if (candidate.version !== 1 || candidate.parent_candidate_id !== null)
    throw new CouncilError('LINEAGE_MISMATCH', 'an initial candidate has version 1 and no parent', 'parent_candidate_id');
  if (run.candidates[candidate.candidate_id])
    throw new CouncilError('DUPLICATE_ARTIFACT', `candidate ${candidate.candidate_id} already exists`, 'candidate_id');
  return [ev(E.CandidateSubmitted, withUsage({ task_id: task.task_id, member_id: member, candidate }))];
}

/**
 * Spec 11, review and anonymity: reviews of the candidates this reviewer was shown, never its own
 * (11.3); blind refs (11.1) resolved to real ids.
 */
function acceptReviews(a: Answer): CouncilEvent[] {
  const { run, task, member, command, ev, withUsage } = a;
  const items = reviewsIn(command.artifact);
  if (items.length === 0) fail('reviews', 'must contain at least one review');
  const targets = new Set(reviewTargetsFor(run, member, taskTargetIds(run, task)));
  const seen = new Set<string>();
  const single = !Array.isArray(command.artifact) && !(isRecord(command.artifact) && Array.isArray(command.artifact['reviews']));
  const reviews: ReviewArtifact[] = items.map((item, i) => {
    const path = single ? '' : `reviews[${i}]`;
    const review = parseReviewArtifact(item, path);
    if (review.reviewer_member_id !== member)
      throw new CouncilError('NOT_AUTHORIZED_ROLE', 'a review is written by the member that submits it', join(path, 'reviewer_member_id'));
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

/** Spec 8.5, ConflictMap: every position names an artifact of this run (blind refs resolved). */
function acceptConflictMap(a: Answer): CouncilEvent[] {
  const { run, task, member, command, ev, withUsage } = a;
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

/**
 * Spec 13, frame challenge: the observer's Inside-Outsider check, against the current
 * GoalContract.
 */
function acceptFrameCheck(a: Answer): CouncilEvent[] {
  const { run, task, member, command, ev, withUsage } = a;
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

/**
 * Spec 12, targeted revision: the revision answers the issues selected for this author, by their
 * review refs.
 */
function acceptTargetedRevision(a: Answer): CouncilEvent[] {
  const { run, task, member, command, ev, withUsage } = a;
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

/**
 * Spec 14, chair and synthesis: only the chair or its authorised fallback decides; every claim is
 * grounded and dissent retained.
 */
function acceptChairDecision(a: Answer): CouncilEvent[] {
  const { run, task, member, command, ev, withUsage } = a;
  if (!run.chair_order.includes(member))
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the chair or its authorised fallback records a decision', 'member_id');
  const parsed = parseDecisionRecord(command.artifact);
  const grounded = checkTestEliminations(run, checkDecisionGrounding(run, parsed));
  checkDissentRetained(run, grounded);
  return [
    ev(
      E.ChairDecisionRecorded,
      withUsage({ task_id: task.task_id, chair_member_id: member, decision_record: withDegradedFacts(run, grounded) }),
    ),
  ];
}

function reviewsIn(artifact: unknown): unknown[] {
  if (Array.isArray(artifact)) return artifact;
  if (isRecord(artifact) && Array.isArray(artifact['reviews'])) return artifact['reviews'];
  return [artifact];
}

/** The real candidate ids a review task showed (from its blind refs). */
function taskTargetIds(run: RunData, task: TaskRecord): string[] {
  const shown = Array.isArray(task.inputs['candidates']) ? (task.inputs['candidates'] as { candidate_ref?: string }[]) : [];
  return shown
    .map((c) => (c.candidate_ref ? resolveArtifactRef(run, c.candidate_ref) : undefined))
    .filter((id): id is string => id !== undefined);
}
