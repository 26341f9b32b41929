/**
 * Spec section 11: a Decision Event (12.6 / B.2, with the 11.3 lineage extensions `caused_by`
 * (the proposal, as 11.3 defines it), `proposal_caused_by` (the earlier entries that proposal
 * named as its causes) and `payload_summary`) for every terminal transition - approved, rejected, escalated, expired -
 * and once more after a human resolution. Its `event_id` is the log event's id, so the
 * decisions stream can deduplicate a re-publication by `Nats-Msg-Id`.
 */
import { DECISION_EVENT_TYPE, WIRE_SCHEMA_VERSION } from './contracts';
import { canonicalJson } from './canonical-json';
import { AcpError } from './errors';
import { domainPolicyRef } from './domain-policy';
import { ProposalEvent, TerminalProposalEvent, isTerminalEvent } from './proposal.events';
import type { ProposalDetails, ProposalState } from './proposal.state';
import type { DecisionEvent } from './wire-format';

export const PAYLOAD_SUMMARY_MAX_LENGTH = 256;

/**
 * Default `payload_summary`: the payload's canonical JSON (sorted keys), cut to 256 characters.
 * Deterministic, so a replay publishes the same bytes.
 */
export function summarizePayload(proposal: Pick<ProposalDetails, 'payload'>): string {
  const json = canonicalJson(proposal.payload);
  return json.length <= PAYLOAD_SUMMARY_MAX_LENGTH ? json : `${json.slice(0, PAYLOAD_SUMMARY_MAX_LENGTH - 1)}…`;
}

export interface DecisionEventOptions {
  /** Replace the default summary (must be pure and deterministic). */
  summarizePayload?: (proposal: ProposalDetails) => string;
}

/**
 * The decision event for one log event, or undefined when the event is not terminal.
 * `state` is any state of the same proposal after its submission (typically the state after
 * evolving `event`); only the proposal's fixed details are read from it.
 */
export function toDecisionEvent(event: ProposalEvent, state: ProposalState, options: DecisionEventOptions = {}): DecisionEvent | undefined {
  if (!isTerminalEvent(event)) return undefined;
  if (state.status === 'initial' || state.proposal.proposal_id !== event.data.proposal_id) {
    throw new AcpError('INTERNAL', `decision event for ${event.data.proposal_id} needs that proposal's state`);
  }
  return buildDecisionEvent(event, state.proposal, options);
}

function buildDecisionEvent(event: TerminalProposalEvent, p: ProposalDetails, options: DecisionEventOptions): DecisionEvent {
  const r = event.data.resolution;
  const decision: DecisionEvent = {
    schema_version: WIRE_SCHEMA_VERSION,
    event_id: event.event_id,
    event_type: DECISION_EVENT_TYPE,
    proposal_id: p.proposal_id,
    domain: p.domain,
    outcome: r.outcome,
    trigger: r.trigger,
    votes_for: r.votes_for,
    votes_against: r.votes_against,
    decided_at: r.decided_at,
    caused_by: p.proposal_id,
    payload_summary: (options.summarizePayload ?? summarizePayload)(p),
    correlation_id: event.correlation_id,
  };
  if (p.payload_hash !== null) decision.payload_hash = p.payload_hash;
  if (p.caused_by && p.caused_by.length > 0) decision.proposal_caused_by = [...p.caused_by];
  if (r.escalation) decision.escalation = r.escalation;
  if (r.resolved_by !== undefined) decision.resolved_by = r.resolved_by;
  if (r.note !== undefined) decision.note = r.note;
  if (r.auto_resolved) decision.auto_resolved = true;
  if (r.sign_offs) decision.sign_offs = r.sign_offs.map((s) => ({ ...s }));
  if (r.vetoed) decision.vetoed = true;
  if (r.ladder_default) decision.ladder_default = true;
  if (p.policy) decision.policy = domainPolicyRef(p.policy);
  return decision;
}
