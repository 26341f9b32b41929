/**
 * Read side of a proposal's state: the spec 12.2 wire object, and what the resolver and the
 * sweeper should do next - so that services hold no protocol rules.
 */
import { PROPOSAL_EVENT_TYPES, WIRE_SCHEMA_VERSION } from './contracts';
import type { ProposalStatus } from './contracts';
import type { ProposalEvent } from './proposal.events';
import { AcpError } from './errors';
import type { ResolveProposal } from './proposal.commands';
import { DEFAULT_DECIDER_CONFIG, DeciderConfig } from './proposal.decider';
import type { ProposalState } from './proposal.state';
import { parentOutcome } from './domain-scoped-resolution';
import { isQuorumMet } from './quorum-policies';
import { expiryDeadline, isExpired } from './timeout-and-expiration';
import type { Proposal } from './wire-format';

/** Spec 12.2 Proposal with its responses and resolution (plus extension fields when set). */
export function projectProposal(state: ProposalState): Proposal {
  if (state.status === 'initial') throw new AcpError('PROPOSAL_NOT_FOUND', 'proposal does not exist', 'proposal_id');
  const p = state.proposal;
  const proposal: Proposal = {
    schema_version: WIRE_SCHEMA_VERSION,
    proposal_id: p.proposal_id,
    type: p.type,
    domain: p.domain,
    author: p.author,
    payload: p.payload,
    status: state.status,
    responses: state.responses.map((r) => r.response),
    quorum: p.quorum,
    created_at: p.created_at,
    expires_at: p.expires_at,
    resolution: state.status === 'pending' ? null : state.resolution,
  };
  if (p.quorum_policy) proposal.quorum_policy = p.quorum_policy;
  if (p.depends_on.length > 0) proposal.depends_on = [...p.depends_on];
  if ((state.status === 'escalated' || state.status === 'resolved') && state.escalation) proposal.escalation = state.escalation;
  if (p.payload_hash !== null) proposal.payload_hash = p.payload_hash;
  if (p.caused_by && p.caused_by.length > 0) proposal.caused_by = [...p.caused_by];
  if (p.eligible_participants !== null) proposal.eligible_participants = [...p.eligible_participants];
  if (p.policy) proposal.policy = p.policy;
  return proposal;
}

/**
 * For the resolver: the ResolveProposal command data when a pending proposal's quorum policy is
 * met (or, for a parent, when every child has a final outcome), else undefined.
 */
export function pendingResolution(
  state: ProposalState,
  config: DeciderConfig = DEFAULT_DECIDER_CONFIG,
): ResolveProposal['data'] | undefined {
  if (state.status !== 'pending') return undefined;
  const p = state.proposal;
  const due =
    p.depends_on.length > 0
      ? parentOutcome(p.depends_on, state.childOutcomes).kind === 'resolve'
      : isQuorumMet(state, config.quorumPolicies);
  return due ? { proposal_id: p.proposal_id } : undefined;
}

/** Whether a RecordResponse could be accepted now (pending, not a parent, quorum not met). */
export function acceptsResponses(state: ProposalState, config: DeciderConfig = DEFAULT_DECIDER_CONFIG): boolean {
  return state.status === 'pending' && state.proposal.depends_on.length === 0 && !isQuorumMet(state, config.quorumPolicies);
}

/** For the sweeper's timers: when a pending proposal becomes expirable (expires_at + grace), or null. */
export function expiryDueAt(state: ProposalState, config: DeciderConfig = DEFAULT_DECIDER_CONFIG): string | null {
  if (state.status !== 'pending') return null;
  return expiryDeadline(state.proposal.expires_at, config.expiryGraceMs);
}

/** For the sweeper's full sweep: should ExpireProposal be issued at `now`? */
export function isExpiryDue(state: ProposalState, now: string, config: DeciderConfig = DEFAULT_DECIDER_CONFIG): boolean {
  return state.status === 'pending' && isExpired(state.proposal.expires_at, now, config.expiryGraceMs);
}

/**
 * The status a proposal has once `event` is applied, knowing only its status before: for read
 * models (lists, indexes) that keep the status of every proposal without their whole state.
 * Agrees with `evolveProposal(...).status` on every log the decider produces.
 */
export function statusAfter(event: ProposalEvent, before: ProposalStatus | undefined): ProposalStatus {
  switch (event.type) {
    case PROPOSAL_EVENT_TYPES.ProposalSubmitted:
    case PROPOSAL_EVENT_TYPES.ResponseRecorded:
    case PROPOSAL_EVENT_TYPES.ChildOutcomeRecorded:
      return before ?? 'pending';
    case PROPOSAL_EVENT_TYPES.ProposalResolved:
    case PROPOSAL_EVENT_TYPES.EscalationResolved:
      return 'resolved';
    case PROPOSAL_EVENT_TYPES.ProposalEscalated:
      return 'escalated';
    case PROPOSAL_EVENT_TYPES.EscalationRouted:
    case PROPOSAL_EVENT_TYPES.EscalationReminded:
    case PROPOSAL_EVENT_TYPES.EscalationReassigned:
    case PROPOSAL_EVENT_TYPES.EscalationSignedOff:
      return before ?? 'escalated';
    case PROPOSAL_EVENT_TYPES.EscalationDefaulted:
      return event.data.resolution.outcome === 'expired' ? 'expired' : 'resolved';
    case PROPOSAL_EVENT_TYPES.ProposalExpired:
      return 'expired';
    default: {
      const _exhaustive: never = event;
      throw new AcpError('INTERNAL', `unknown proposal event ${(_exhaustive as { type?: unknown }).type}`);
    }
  }
}
