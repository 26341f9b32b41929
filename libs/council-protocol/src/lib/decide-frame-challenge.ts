import { DeclineFrameChallenge, ReviseGoalContract } from './commands';
import { COUNCIL_EVENT_TYPES as E, LEVELS_OF_THREE } from './contracts';
import { envelope, requireOwnerOrChair, requireRunning, requireStarted } from './decide-support';
import { CouncilError } from './errors';
import { CouncilEvent } from './events';
import { artifactsRemainComparable, budgetChanged } from './frame-challenge';
import { parseGoalContract, runDomain } from './goal-contract';
import { CouncilRunState } from './state';
import { fail } from './validation';

/* Spec 13, frame challenge, with 7.1 (Controller is not Chair): the GoalContract's revisions. */

/**
 * An accepted frame challenge (or an owner's realignment) revises the GoalContract. The chair
 * may reframe but never touch budgets or ownership (7.1); the controller alone judges whether
 * the old artifacts remain comparable, and restarts the proposal stage when they do not.
 */
export function decideReviseGoalContract(command: ReviseGoalContract, state: CouncilRunState): CouncilEvent[] {
  // The role first: a refusal tells someone who is neither owner nor chair nothing about the run.
  const who = requireOwnerOrChair(requireStarted(state), command.actor);
  const run = requireRunning(state);
  if (command.event_id !== undefined && run.applied_event_ids[command.event_id]) return [];
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
  // The owner and the domain are what the run was authorised for at its start (its owner's grant,
  // the ACP proposal that asked for it): a revision keeps both, or a run could be handed to someone
  // else (who then bridges what it helped write) or moved where its owner has no grant.
  if (revised.decision_owner !== previous.decision_owner) {
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'a revision keeps the run’s decision owner', 'goal_contract.decision_owner');
  }
  if (runDomain(revised) !== runDomain(previous) || revised.domain !== previous.domain) {
    throw new CouncilError('NOT_AUTHORIZED_ROLE', `a revision keeps the run’s domain (${runDomain(previous)})`, 'goal_contract.domain');
  }
  if (who !== 'owner' && LEVELS_OF_THREE.indexOf(revised.risk_level) < LEVELS_OF_THREE.indexOf(previous.risk_level)) {
    // A lower risk level turns off safeguards (a high-risk run stops on an incomplete panel): the owner's call.
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the decision owner lowers the risk level', 'goal_contract.risk_level');
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
  requireOwnerOrChair(requireStarted(state), command.actor);
  const run = requireRunning(state);
  if (command.event_id !== undefined && run.applied_event_ids[command.event_id]) return [];
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
