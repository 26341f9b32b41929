import { decisionFingerprint } from './candidate-artifact';
import { unresolvedValueConflicts } from './conflict-map';
import { TerminalState, levelNumber } from './contracts';
import { NO_DECISION } from './decision-record';
import { Checkpoint, QualitySignal, RevisionRequestEntry, RoundDecision, StopReason, TerminationReason } from './events';
import { maxTimeMs } from './goal-contract';
import { meanRubricScore } from './review-artifact';
import { activeMembers, currentCandidateIds, latestConflictMap } from './run-queries';
import { RunData } from './state';
import { selectTargetedIssues } from './targeted-revision';
import { instantMs } from './validation';
import { RunAggregationResult, aggregateRun } from './evaluation/aggregation';
import { executableTestResultsOf, reviewTestReportsOf } from './evaluation/test-results';

/**
 * Spec section 17. Hard limits need no member's consent; quality signals may stop early;
 * regression returns to the best checkpoint; oscillation keeps both positions.
 */

/** 17.1 hard limits on time, cost and tokens (rounds are bounded by the round loop itself). */
export function checkHardLimits(run: RunData, now: string): TerminationReason | null {
  const budget = run.goal_contract.budget;
  if (instantMs(now, 'now') - instantMs(run.started_at, 'started_at') >= maxTimeMs(run.goal_contract)) return 'max-time';
  if (budget.max_cost !== undefined && run.usage.cost >= budget.max_cost) return 'max-cost';
  if (budget.max_tokens !== undefined && run.usage.tokens >= budget.max_tokens) return 'max-tokens';
  return null;
}

/** Run deadline as epoch ms: no task deadline may run past it. */
export function runDeadlineMs(run: RunData): number {
  return instantMs(run.started_at, 'started_at') + maxTimeMs(run.goal_contract);
}

/**
 * Checkpoint after a review stage: each current candidate scored by the mean rubric score of
 * this round's reviews of it (current-run artifact evaluation only, 15.1); the checkpoint's
 * score is its best candidate's. With a council:L4 aggregation in the policy, the round's reviews
 * are also aggregated by it (15.2) and the checkpoint's score is the cardinal score of the
 * candidate the aggregation selects: ranking methods compare candidates within one round only,
 * so plateau and regression keep a cardinal scale (the weighted rubric's when that is the method).
 * Test-first elimination reads the executable test results the round's reviews carry.
 */
export function computeCheckpoint(run: RunData): Checkpoint {
  const ids = currentCandidateIds(run);
  const checkpoint_id = `${run.run_id}:checkpoint:${run.round}`;
  const reviews = run.review_order
    .map((r) => run.reviews[r])
    .filter((r) => r.round === run.round && r.generation === run.generation)
    .map((r) => r.review);
  const scores: Record<string, number | null> = {};
  for (const id of ids) {
    const values = reviews
      .filter((r) => r.target_candidate_id === id)
      .map((r) => meanRubricScore(r))
      .filter((v): v is number => v !== null);
    scores[id] = values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
  }
  const aggregation = run.policy.aggregation ? checkpointAggregation(run, ids, reviews, checkpoint_id) : undefined;
  if (aggregation?.detail.method === 'weighted-rubric')
    for (const r of aggregation.ranking) if (r.score !== null && r.candidate_id in scores) scores[r.candidate_id] = r.score;
  // A candidate eliminated by its executable tests does not stand for the checkpoint: when all
  // are, the checkpoint has no score, so no later round regresses to it (15.1, 17.3).
  const out = new Set(aggregation?.eliminated.map((e) => e.candidate_id) ?? []);
  const present = ids.filter((id) => !out.has(id)).flatMap((id) => (scores[id] === null ? [] : [scores[id] as number]));
  const leader = aggregation?.selected ?? null;
  const score =
    leader !== null && scores[leader] !== null && scores[leader] !== undefined
      ? scores[leader]
      : present.length
        ? Math.max(...present)
        : null;
  const checkpoint: Checkpoint = {
    checkpoint_id,
    round: run.round,
    generation: run.generation,
    goal_contract_id: run.goal_contract.goal_contract_id,
    candidate_ids: ids,
    scores,
    score,
  };
  if (aggregation) checkpoint.aggregation = aggregation;
  return checkpoint;
}

/** The policy's aggregation over this round's reviews, seeded per checkpoint (deterministic on replay). */
function checkpointAggregation(
  run: RunData,
  ids: readonly string[],
  reviews: RunData['reviews'][string]['review'][],
  checkpointId: string,
): RunAggregationResult {
  const authors: Record<string, string> = {};
  for (const id of ids) authors[id] = run.candidates[id].candidate.author_member_id;
  return aggregateRun(
    {
      candidate_ids: ids,
      reviews,
      authors,
      seed: `${run.seed}:${checkpointId}`,
      test_results: executableTestResultsOf(reviewTestReportsOf(reviews), authors),
      conflict_map: latestConflictMap(run) ?? null,
      decision_owner: run.goal_contract.decision_owner,
    },
    run.policy.aggregation as NonNullable<RunData['policy']['aggregation']>,
  );
}

function scoredCheckpoints(run: RunData): (Checkpoint & { score: number })[] {
  return run.checkpoints.filter((c): c is Checkpoint & { score: number } => c.generation === run.generation && c.score !== null);
}

/** Best checkpoint of the current frame; on a tie the later one. It may precede the last round. */
export function bestCheckpoint(run: RunData): Checkpoint | undefined {
  let best: Checkpoint | undefined;
  for (const c of scoredCheckpoints(run)) if (!best || (c.score as number) >= (best.score as number)) best = c;
  return best;
}

export function marginalGains(run: RunData): number[] {
  const cps = scoredCheckpoints(run);
  return cps.slice(1).map((c, i) => c.score - cps[i].score);
}

/** 17.3: the latest checkpoint is worse than the best earlier one under the rubric. */
export function detectRegression(run: RunData): Extract<QualitySignal, { signal: 'regression' }> | null {
  const cps = scoredCheckpoints(run);
  const latest = cps[cps.length - 1];
  const best = bestCheckpoint(run);
  if (!latest || !best || best.checkpoint_id === latest.checkpoint_id) return null;
  if (latest.score < (best.score as number) - run.policy.regression_tolerance) {
    return { signal: 'regression', best_checkpoint_id: best.checkpoint_id, best_score: best.score as number, latest_score: latest.score };
  }
  return null;
}

/** 17.2: marginal gain below the threshold for N consecutive rounds. */
export function detectPlateau(run: RunData): Extract<QualitySignal, { signal: 'marginal-gain-plateau' }> | null {
  const gains = marginalGains(run);
  const n = run.policy.plateau_rounds;
  if (gains.length < n) return null;
  const last = gains.slice(-n);
  return last.every((g) => g < run.policy.marginal_gain_threshold) ? { signal: 'marginal-gain-plateau', gains: last } : null;
}

function revisionsOfRound(run: RunData, round: number): string[] {
  return run.candidate_order.filter((id) => {
    const s = run.candidates[id];
    return s.round === round && s.generation === run.generation && s.candidate.parent_candidate_id !== null;
  });
}

/** 17.2: this round's revisions changed no decision-relevant field of their parents. */
export function candidatesStable(run: RunData): boolean {
  const revised = revisionsOfRound(run, run.round);
  if (revised.length === 0) return false;
  return revised.every((id) => {
    const c = run.candidates[id].candidate;
    const parent = run.candidates[c.parent_candidate_id as string]?.candidate;
    return parent !== undefined && decisionFingerprint(parent) === decisionFingerprint(c);
  });
}

/**
 * 17.3: A→B→A oscillation of a lineage's decision-relevant fields. Both positions are kept and
 * the discriminating evidence (or value owner) named by the conflict map is exposed.
 */
export function detectOscillation(run: RunData): Extract<QualitySignal, { signal: 'oscillation' }>[] {
  const out: Extract<QualitySignal, { signal: 'oscillation' }>[] = [];
  const map = latestConflictMap(run);
  for (const id of run.lineage_order) {
    const lineage = run.lineages[id];
    if (lineage.generation !== run.generation || lineage.versions.length < 3) continue;
    const [a, b, c] = lineage.versions.slice(-3);
    const fp = (x: string) => decisionFingerprint(run.candidates[x].candidate);
    if (fp(a) === fp(c) && fp(a) !== fp(b)) {
      const discriminating = (map?.conflicts ?? [])
        .filter((k) => k.positions.some((p) => p === a || p === b || p === c))
        .map((k) => k.discriminating_evidence ?? `value choice owned by ${k.value_owner}`);
      out.push({ signal: 'oscillation', lineage_id: id, positions: [a, b], discriminating_evidence: discriminating });
    }
  }
  return out;
}

export interface RoundEvaluation {
  signals: QualitySignal[];
  decision: RoundDecision;
  stop_reason?: StopReason;
  best_checkpoint_id: string | null;
  basis_candidate_ids: string[];
  open_issue_ids: string[];
  requests: RevisionRequestEntry[];
}

/**
 * The controller's round decision: revise again, or stop and synthesise. Deterministic, and
 * never a model's call: a member cannot extend the run by claiming one more round helps.
 */
export function evaluateRound(run: RunData): RoundEvaluation {
  const current = currentCandidateIds(run);
  const allRequests = selectTargetedIssues(run, current, run.round);
  const active = new Set(activeMembers(run).map((m) => m.member_id));
  const requests = allRequests.filter((r) => active.has(r.author_member_id));
  const orphaned = allRequests.filter((r) => !active.has(r.author_member_id));
  const open_issue_ids = allRequests.flatMap((r) => r.issues.map((i) => i.issue_id));
  const best = bestCheckpoint(run);
  const signals: QualitySignal[] = [];

  const values = unresolvedValueConflicts(latestConflictMap(run));
  if (values.length) signals.push({ signal: 'value-choice-required', conflict_ids: values.map((c) => c.conflict_id) });
  const regression = detectRegression(run);
  if (regression) signals.push(regression);
  const oscillations = detectOscillation(run);
  signals.push(...oscillations);
  if (orphaned.length) {
    signals.push({
      signal: 'consensus-by-participant-failure',
      member_ids: [...new Set(orphaned.map((r) => r.author_member_id))],
      issue_ids: orphaned.flatMap((r) => r.issues.map((i) => i.issue_id)),
    });
  }
  if (allRequests.length === 0) signals.push({ signal: 'all-material-issues-resolved-or-retained' });
  const stable = candidatesStable(run);
  if (stable) signals.push({ signal: 'candidates-stable' });
  const plateau = detectPlateau(run);
  if (plateau) signals.push(plateau);

  const base = { signals, best_checkpoint_id: best?.checkpoint_id ?? null, open_issue_ids, requests };
  const stop = (stop_reason: StopReason, basis = current): RoundEvaluation => ({
    ...base,
    decision: 'synthesize',
    stop_reason,
    basis_candidate_ids: basis,
  });

  if (levelNumber(run.policy.level) < 2) return stop('single-round-profile');
  if (values.length) return stop('value-choice-required');
  if (regression && best) return stop('regression-to-best-checkpoint', best.candidate_ids);
  if (oscillations.length) return stop('oscillation');
  // Issues left open only because their author failed are not resolved (17.3).
  if (requests.length === 0) return stop(orphaned.length ? 'participant-failure' : 'all-material-issues-resolved-or-retained');
  if (stable) return stop('candidates-stable');
  if (plateau) return stop('marginal-gain-plateau');
  // Out of rounds with issues open: the chair works from the best checkpoint, which may precede
  // the last round even when the drop stayed within the regression tolerance.
  if (run.round >= run.goal_contract.budget.max_rounds) return stop('max-rounds', best ? best.candidate_ids : current);
  return { ...base, decision: 'revise', basis_candidate_ids: current };
}

/** Issues orphaned by a failed author in the current frame: they must survive as dissent. */
export function orphanedIssueIds(run: RunData): string[] {
  const ids = run.rounds.flatMap((r) => r.signals.flatMap((s) => (s.signal === 'consensus-by-participant-failure' ? s.issue_ids : [])));
  return [...new Set(ids)].filter((id) => run.reviews[id.split('#issue-')[0]]?.generation === run.generation);
}

/**
 * The checkpoint a recorded decision rests on: the one whose candidates the chair was given
 * (the last round's basis); without a decision, the best checkpoint.
 */
export function decisionCheckpoint(run: RunData): Checkpoint | undefined {
  const basis = run.rounds[run.rounds.length - 1]?.basis_candidate_ids;
  if (!run.decision || !basis) return bestCheckpoint(run);
  const key = [...basis].sort().join('\n');
  const matching = run.checkpoints.filter((c) => c.generation === run.generation && [...c.candidate_ids].sort().join('\n') === key);
  return matching[matching.length - 1] ?? bestCheckpoint(run);
}

/**
 * Terminal state once the chair has recorded its decision (17.4). Value conflicts go to the
 * human owner whatever the chair wrote; a run stopped by its round budget with issues still
 * open reports the best checkpoint, not a clean decision.
 */
export function deriveTerminalState(run: RunData): TerminalState {
  if (unresolvedValueConflicts(latestConflictMap(run)).length > 0) return 'needs-human-value-choice';
  // The policy leaves the choice to the owner once the conflict map is known (15.2).
  if (run.policy.aggregation?.method === 'human-decides-after-conflict-map') return 'needs-human-value-choice';
  return terminalStateWithoutValueChoice(run);
}

/**
 * The terminal state once no value choice is open (17.4): after the owner's choice adopted the
 * DecisionRecord, the run is decided like any other, with its dissent and its round budget.
 */
export function terminalStateWithoutValueChoice(run: RunData): TerminalState {
  const record = run.decision?.decision_record;
  if (!record || record.selected_path === NO_DECISION) return 'abstained-insufficient-evidence';
  const last = run.rounds[run.rounds.length - 1];
  if (last?.stop_reason === 'max-rounds' && last.open_issue_ids.length > 0) return 'budget-exhausted-best-checkpoint';
  return record.unresolved_dissent.length > 0 ? 'decided-with-dissent' : 'decided';
}
