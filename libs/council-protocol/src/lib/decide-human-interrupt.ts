import { InterruptRun } from './commands';
import { COUNCIL_EVENT_TYPES as E } from './contracts';
import { bestCheckpoint } from './convergence-and-termination';
import { envelope, requireRunning, requireStarted } from './decide-support';
import { CouncilError } from './errors';
import { CouncilEvent } from './events';
import { CouncilRunState } from './state';
import { fail } from './validation';

/** The human-interrupt boundary (17.1): stop now, keep the best checkpoint, record why. */
export function decideInterruptRun(command: InterruptRun, state: CouncilRunState): CouncilEvent[] {
  if (state.status === 'terminated' && command.event_id !== undefined && state.applied_event_ids[command.event_id]) return [];
  if (typeof command.actor !== 'string' || command.actor.trim() === '') fail('actor', 'an interrupt names who interrupted');
  // The human-interrupt boundary (17.1) is the owner's, not a member's or a bystander's; checked
  // before the run's state, which is not theirs to learn.
  if (command.actor !== requireStarted(state).goal_contract.decision_owner)
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the decision owner interrupts the run', 'actor');
  const run = requireRunning(state);
  if (typeof command.reason !== 'string' || command.reason.trim() === '') fail('reason', 'an interrupt states its reason');
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
