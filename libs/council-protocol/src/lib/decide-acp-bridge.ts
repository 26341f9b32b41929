import { bridgeEscalates, requireOwnerApartFromPanel, valueChoiceOwners } from './acp-bridge';
import { RecordDecisionBridge, ResolveValueChoice } from './commands';
import { unresolvedValueConflicts } from './conflict-map';
import { COUNCIL_EVENT_TYPES as E } from './contracts';
import { terminalStateWithoutValueChoice } from './convergence-and-termination';
import { NO_DECISION } from './decision-record';
import { envelope } from './decide-support';
import { CouncilError } from './errors';
import { CouncilEvent, ValueChoiceResolved } from './events';
import { runDomain } from './goal-contract';
import { latestConflictMap } from './run-queries';
import { CouncilRunState, StartedRun } from './state';
import { clone, fail } from './validation';

/* The bridge to ACP (an extension) and the owner's value choice it carries back (spec 8.5). */

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
  requireOwnerApartFromPanel(run);
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
