import { ConflictMap } from './conflict-map';
import { CHAIR_MODES, ChairMode } from './contracts';
import { QualitySignal } from './events';
import { DecisionRecord, NO_DECISION, SYNTHESIS, dissentMentions } from './decision-record';
import { CouncilError } from './errors';
import { openFrameChallenges } from './frame-challenge';
import { decisionCheckpoint, orphanedIssueIds } from './convergence-and-termination';
import { RunAggregationResult } from './evaluation/aggregation';
import { blindCandidate, blindCandidateRef, blindReview, blindReviewRef, resolveArtifactRef, scrubMemberIds } from './review-and-anonymity';
import { latestConflictMap } from './run-queries';
import { RunData } from './state';
import { clone } from './validation';
import { memberFailureNotes, missingPerspectives } from './failure-and-degraded-operation';

/** A citation inside the chair's text: a blind ref or a candidate label. */
const CITATION = /anon-[A-Z]+-v\d+|review-\d+(?:#issue-\d+)?|Candidate [A-Z]+/g;

/** Every citation in the chair's own text must name an artifact of this run. */
function checkTextCitations(run: RunData, text: string, field: string): void {
  for (const [cited] of text.matchAll(CITATION)) {
    const label = /^Candidate ([A-Z]+)$/.exec(cited);
    const known = label
      ? run.lineage_order.some((id) => run.lineages[id].letter === label[1])
      : resolveArtifactRef(run, cited) !== undefined;
    if (!known) throw new CouncilError('UNREFERENCED_CLAIM', `${cited} is not an artifact of this run`, field);
  }
}

/**
 * Spec section 14. The Chair selects, synthesises within bounds, or reframes from existing
 * evidence; it MUST NOT present an unreferenced new fact as Council knowledge. The reference
 * fields (selected_path, grounded_in, incorporated, rejected) must resolve to artifacts of this
 * run, and every artifact the chair's text cites (decision, actions, stop-loss conditions,
 * reversal signals: `anon-B-v2`, `review-3#issue-1`, `Candidate B`) must exist in it; otherwise
 * UNREFERENCED_CLAIM. Uncited prose cannot be checked mechanically; labelled speculation is exempt.
 */
export function checkDecisionGrounding(run: RunData, input: DecisionRecord): DecisionRecord {
  const record = clone(input);
  const resolve = (ref: string, field: string): string => {
    const id = resolveArtifactRef(run, ref);
    if (id === undefined) throw new CouncilError('UNREFERENCED_CLAIM', `${ref} is not an artifact of this run`, field);
    return id;
  };
  if (record.goal_contract_id !== run.goal_contract.goal_contract_id) {
    throw new CouncilError('UNKNOWN_REFERENCE', `the run's GoalContract is ${run.goal_contract.goal_contract_id}`, 'goal_contract_id');
  }
  if (record.decision_owner !== run.goal_contract.decision_owner) {
    throw new CouncilError(
      'NOT_AUTHORIZED_ROLE',
      `the decision owner is ${run.goal_contract.decision_owner}; the chair cannot reassign it`,
      'decision_owner',
    );
  }
  const isPath = record.selected_path === NO_DECISION || record.selected_path === SYNTHESIS;
  if (!isPath) {
    const id = resolve(record.selected_path, 'selected_path');
    if (!run.candidates[id])
      throw new CouncilError('UNREFERENCED_CLAIM', 'selected_path names a candidate, synthesis or no-decision', 'selected_path');
    requireCurrentFrame(run, id, 'selected_path');
    record.selected_path = id;
  }
  record.grounded_in = record.grounded_in.map((r, i) => resolve(r, `grounded_in[${i}]`));
  record.incorporated = record.incorporated.map((r, i) => {
    const id = resolve(r, `incorporated[${i}]`);
    requireCurrentFrame(run, id, `incorporated[${i}]`);
    return id;
  });
  record.rejected = record.rejected.map((r, i) => {
    const id = resolveArtifactRef(run, r.artifact);
    if (id === undefined)
      throw new CouncilError('UNKNOWN_REFERENCE', `${r.artifact} is not an artifact of this run`, `rejected[${i}].artifact`);
    return { ...r, artifact: id };
  });
  checkTextCitations(run, record.decision, 'decision');
  for (const key of ['actions', 'stop_loss_conditions', 'reversal_signals'] as const)
    record[key].forEach((t, i) => checkTextCitations(run, t, `${key}[${i}]`));
  if (record.selected_path !== NO_DECISION && record.grounded_in.length === 0) {
    throw new CouncilError('UNREFERENCED_CLAIM', 'a decision must be grounded in at least one artifact of the run', 'decision');
  }
  const mode = chairMode(record);
  if (mode !== undefined) record.chair_mode = mode;
  checkChairMode(run, record);
  return record;
}

/** The chair's mode, stated or implied by selected_path. */
export function chairMode(record: DecisionRecord): ChairMode | undefined {
  if (record.chair_mode) return record.chair_mode;
  if (record.selected_path === NO_DECISION) return undefined;
  return record.selected_path === SYNTHESIS ? 'bounded-synthesis' : 'select';
}

function checkChairMode(run: RunData, record: DecisionRecord): void {
  switch (record.chair_mode) {
    case undefined:
      return;
    case 'select':
      // Select: one candidate dominates; it is the path and it grounds the decision.
      if (!run.candidates[record.selected_path])
        throw new CouncilError('UNREFERENCED_CLAIM', 'select names the selected candidate', 'selected_path');
      if (!record.grounded_in.includes(record.selected_path)) record.grounded_in = [record.selected_path, ...record.grounded_in];
      return;
    case 'bounded-synthesis':
      // Bounded synthesis combines compatible strengths: it says what it incorporated.
      if (record.incorporated.length === 0)
        throw new CouncilError('UNREFERENCED_CLAIM', 'bounded synthesis names the artifacts it incorporated', 'incorporated');
      return;
    case 'grounded-reframing':
      // Grounded reframing derives from existing evidence: grounded_in is already required;
      // any new speculation must be labelled (parseDecisionRecord enforces the label).
      return;
    default: {
      const _exhaustive: never = record.chair_mode;
      return _exhaustive;
    }
  }
}

/**
 * Dissent that must survive into the decision (17.2: resolved or explicitly retained): every
 * unresolved high-impact conflict of the latest conflict map, every open frame challenge, every
 * accepted challenge whose revised contract made the artifacts incomparable with no round left
 * to restart (the candidates answer the old question), and every issue left open because its
 * author failed (17.3).
 */
export function requiredDissent(run: RunData): string[] {
  const map = latestConflictMap(run);
  const conflicts = map
    ? map.conflicts.filter((c) => c.status === 'unresolved' && c.decision_impact === 'high').map((c) => c.conflict_id)
    : [];
  const unrestarted = run.goal_contract_revisions
    .filter((g) => g.frame_check_id !== null && !g.comparable && !g.restarted)
    .map((g) => g.frame_check_id as string);
  const ids = [
    ...conflicts,
    ...openFrameChallenges(run).map((f) => f.frame_check.frame_check_id),
    ...unrestarted,
    ...orphanedIssueIds(run),
  ];
  return [...new Set(ids)];
}

/** How the chair sees a required-dissent id: review issues by their blind ref, the rest as is. */
function blindDissentRef(run: RunData, id: string): string {
  const [reviewId, n] = id.split('#issue-');
  return n !== undefined && run.reviews[reviewId] ? `${blindReviewRef(run, reviewId)}#issue-${n}` : id;
}

export function checkDissentRetained(run: RunData, record: DecisionRecord): void {
  for (const id of requiredDissent(run)) {
    const names = [id, blindDissentRef(run, id)];
    const kept = names.some(
      (n) => record.unresolved_dissent.some((d) => dissentMentions(d, n)) || record.rejected.some((r) => r.artifact === n),
    );
    if (!kept)
      throw new CouncilError(
        'DISSENT_DROPPED',
        `${names[names.length - 1]} is unresolved and must appear in unresolved_dissent (or be rejected with a reason)`,
        'unresolved_dissent',
      );
  }
}

/** The facts of section 18 the controller writes into the record; never semantic content. */
/**
 * Spec 13: once a revised GoalContract restarted the proposal stage, the candidates of the earlier
 * frame answer another question; the chair may cite them as evidence, not select or incorporate them.
 */
function requireCurrentFrame(run: RunData, id: string, field: string): void {
  const c = run.candidates[id];
  if (c && c.generation !== run.generation)
    throw new CouncilError(
      'UNKNOWN_REFERENCE',
      `${id} answers an earlier GoalContract; the run restarted from ${run.goal_contract.goal_contract_id}`,
      field,
    );
}

export function withDegradedFacts(run: RunData, record: DecisionRecord): DecisionRecord {
  return { ...record, missing_perspectives: missingPerspectives(run), member_failures: memberFailureNotes(run) };
}

/**
 * Candidate versions the checkpoints of the current frame eliminated by their executable tests
 * (test-first elimination, 15.1, 15.2), with the latest reason. A version that failed once stays
 * out: a test failure is not outvoted.
 */
export function eliminatedByTests(run: RunData): { candidate_id: string; reason: string }[] {
  const out = new Map<string, string>();
  for (const c of run.checkpoints)
    if (c.generation === run.generation && c.aggregation?.method === 'test-first-elimination')
      for (const e of c.aggregation.eliminated) out.set(e.candidate_id, e.reason);
  return [...out.entries()].map(([candidate_id, reason]) => ({ candidate_id, reason }));
}

/**
 * The chair may not select a candidate version its tests eliminated (ELIMINATED_BY_TESTS), and the
 * record explains every elimination: the controller adds each one the chair did not reject itself
 * to `rejected`, with the failures, the reviews that reported them and their evidence (15 MUST).
 */
export function checkTestEliminations(run: RunData, record: DecisionRecord): DecisionRecord {
  const eliminated = eliminatedByTests(run);
  const hit = eliminated.find((e) => e.candidate_id === record.selected_path);
  if (hit)
    throw new CouncilError(
      'ELIMINATED_BY_TESTS',
      `${blindCandidateRef(run, hit.candidate_id)} was eliminated by executable tests; select a candidate that passed, synthesise, or decide no-decision`,
      'selected_path',
    );
  const rejected = [...record.rejected];
  for (const e of eliminated)
    if (!rejected.some((r) => r.artifact === e.candidate_id))
      rejected.push({ artifact: e.candidate_id, reason: `eliminated by executable tests: ${e.reason}` });
  return { ...record, rejected };
}

/** Chair and authorised fallbacks, in order, still standing and not yet asked. */
export function nextChair(run: RunData): string | undefined {
  return run.chair_order.find(
    (id) =>
      !run.failed_members.includes(id) && !run.task_order.some((t) => run.tasks[t].stage === 'synthesis' && run.tasks[t].member_id === id),
  );
}

function blindConflictMap(run: RunData, map: ConflictMap): ConflictMap {
  return {
    ...map,
    conflicts: map.conflicts.map((c) => ({ ...c, positions: c.positions.map((p) => (run.candidates[p] ? blindCandidateRef(run, p) : p)) })),
  };
}

/** Chair inputs: everything it may ground on, on the blind surface, plus the controller's facts. */
export function synthesisTaskInputs(
  run: RunData,
  basisCandidateIds: readonly string[],
  stopReason: string | undefined,
): Record<string, unknown> {
  const map = latestConflictMap(run);
  const memberContent = scrubMemberIds(
    {
      conflict_map: map ? blindConflictMap(run, map) : null,
      frame_checks: run.frame_checks.map((f) => ({ ...f.frame_check, status: f.status })),
      signals: run.rounds.length ? blindSignals(run, run.rounds[run.rounds.length - 1].signals) : [],
      required_dissent: requiredDissent(run).map((id) => blindDissentRef(run, id)),
      missing_perspectives: missingPerspectives(run),
      aggregation: blindAggregation(run, decisionCheckpoint(run)?.aggregation),
    },
    run.panel.map((m) => m.member_id),
  );
  return {
    candidates: basisCandidateIds.map((id) => blindCandidate(run, id)),
    reviews: run.review_order.filter((id) => run.reviews[id].generation === run.generation).map((id) => blindReview(run, id)),
    ...memberContent,
    stop_reason: stopReason ?? null,
    chair_modes: [...CHAIR_MODES],
    instructions:
      'Return a DecisionRecord. Reference only artifacts above (candidate_ref, review_ref, issue_ref, conflict_id, frame_check_id, evidence refs). Label new speculation. Keep required_dissent in unresolved_dissent.',
  };
}

/**
 * The checkpoint's aggregation (council:L4) as the chair sees it: tiers, ranking and the
 * explanation by blind refs (candidate ids name their authors), without the method's internals.
 * Null when the policy has no aggregation.
 */
function blindAggregation(run: RunData, aggregation: RunAggregationResult | undefined): Record<string, unknown> | null {
  if (!aggregation) return null;
  const { detail: _detail, explanation, ...rest } = aggregation;
  const { dropped_reviews, ...why } = explanation;
  let text = JSON.stringify({ ...rest, explanation: { ...why, dropped_reviews: dropped_reviews.length } });
  // Review ids (named by an elimination's reason) name their reviewer: blind refs instead.
  const refs: [string, string][] = [
    ...Object.keys(run.candidates).map((id): [string, string] => [id, blindCandidateRef(run, id)]),
    ...run.review_order.map((id): [string, string] => [id, blindReviewRef(run, id)]),
  ].sort(([a], [b]) => b.length - a.length);
  for (const [id, ref] of refs) text = text.split(id).join(ref);
  return JSON.parse(text) as Record<string, unknown>;
}

/** Quality signals as the chair sees them: candidates and issues by blind refs, no member ids. */
function blindSignals(run: RunData, signals: readonly QualitySignal[]): QualitySignal[] {
  const ref = (id: string) => (run.candidates[id] ? blindCandidateRef(run, id) : id);
  return signals.map((s) => {
    switch (s.signal) {
      case 'regression':
      case 'all-material-issues-resolved-or-retained':
      case 'marginal-gain-plateau':
      case 'candidates-stable':
      case 'value-choice-required':
        return s;
      case 'oscillation':
        return { ...s, lineage_id: ref(s.lineage_id), positions: s.positions.map(ref) };
      case 'consensus-by-participant-failure':
        return { ...s, member_ids: s.member_ids.map(() => '[member]'), issue_ids: s.issue_ids.map((id) => blindDissentRef(run, id)) };
      default: {
        const _exhaustive: never = s;
        return _exhaustive;
      }
    }
  });
}
