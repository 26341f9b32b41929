/**
 * One pipeline for every command (STYLE.md, the decider sample): decide on the current state,
 * fold the new events, and derive the decision events to publish. Services call this between
 * reading the stream and appending with the expected version.
 */
import { toDecisionEvent, DecisionEventOptions } from './decision-events';
import type { ProposalCommand } from './proposal.commands';
import { DEFAULT_DECIDER_CONFIG, DeciderConfig, decide } from './proposal.decider';
import type { ProposalEvent } from './proposal.events';
import { ProposalState, evolveProposal } from './proposal.state';
import type { DecisionEvent } from './wire-format';

export interface CommandResult {
  /** Events to append (empty: nothing happened). */
  events: ProposalEvent[];
  /** State after the events. */
  state: ProposalState;
  /** Decision events to publish once the append succeeded, in event order. */
  decisions: DecisionEvent[];
}

export function handleProposalCommand(
  state: ProposalState,
  command: ProposalCommand,
  config: DeciderConfig = DEFAULT_DECIDER_CONFIG,
  options: DecisionEventOptions = {},
): CommandResult {
  const events = decide(command, state, config);
  const decisions: DecisionEvent[] = [];
  let next = state;
  for (const e of events) {
    next = evolveProposal(next, e);
    const d = toDecisionEvent(e, next, options);
    if (d) decisions.push(d);
  }
  return { events, state: next, decisions };
}
