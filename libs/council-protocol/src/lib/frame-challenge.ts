import { GoalContract } from './goal-contract';
import { activeMembersWithRole } from './run-queries';
import { RunData, StoredFrameCheck } from './state';
import { stableJson } from './validation';

/**
 * Spec section 13: after an accepted frame-challenge the Controller revises the GoalContract
 * and decides whether existing artifacts remain comparable. Deterministic rule: candidates
 * answered the question and goal against the success criteria; if any of those, or the non-
 * goals, change, the old candidates answer a different question and are not comparable.
 * Constraints, evidence, unknowns and the time horizon may be refined without a restart.
 */
export function artifactsRemainComparable(previous: GoalContract, revised: GoalContract): boolean {
  return (
    previous.question.trim() === revised.question.trim() &&
    previous.goal.trim() === revised.goal.trim() &&
    stableJson(previous.success_criteria) === stableJson(revised.success_criteria) &&
    stableJson(previous.non_goals) === stableJson(revised.non_goals)
  );
}

/** Budgets only the decision owner may change; the chair or a member never can (7.1). */
export function budgetChanged(previous: GoalContract, revised: GoalContract): boolean {
  return stableJson(previous.budget) !== stableJson(revised.budget);
}

/** A frame check is due once per GoalContract version, when a frame observer stands. */
export function frameCheckDue(run: RunData): boolean {
  if (activeMembersWithRole(run, 'frame-observer').length === 0) return false;
  return !run.frame_checks.some((f) => f.goal_contract_id === run.goal_contract.goal_contract_id);
}

/** Challenges neither accepted nor declined: they must survive as dissent in the decision. */
export function openFrameChallenges(run: RunData): StoredFrameCheck[] {
  return run.frame_checks.filter((f) => f.status === 'open');
}
