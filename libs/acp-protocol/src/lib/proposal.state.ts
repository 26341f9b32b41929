/**
 * Proposal state: a tagged union keyed by status (spec 4.1, plus `initial` for a stream that
 * does not exist yet), folded from events by `evolveProposal`. Vote totals are kept exact and
 * running, so a decision on a proposal with many responses costs no re-summing.
 */
import { PROPOSAL_EVENT_TYPES } from './contracts';
import { AcpError } from './errors';
import type { ExactDecimal } from './exact-decimal';
import type { ProposalEvent } from './proposal.events';
import type { ProposalDetails } from './proposal.details';
import { EMPTY_TALLY, VoteTally, addVote } from './weighted-voting';
import { policyWeight } from './domain-policy';
import type { ChildOutcome, EscalationMetadata, Resolution, Response } from './wire-format';
import type { EscalationRouting } from './escalation-ladder';
import type { HumanSignOff } from './human-sign-off';

/** What a proposal is, fixed at submission (1.4 #3: proposals are immutable). */
export type { EligibleParticipantsSource, ProposalDetails, SecurityLabel } from './proposal.details';

export interface RecordedResponse {
  response: Response;
  /** Exact product of the clamped factors (6.1); `response.weight` is its number form. */
  exactWeight: ExactDecimal;
}

interface Submitted {
  proposal: ProposalDetails;
  responses: readonly RecordedResponse[];
  respondents: ReadonlySet<string>;
  tally: VoteTally;
  /** Final outcomes of the children recorded so far (9.3). */
  childOutcomes: Readonly<Record<string, ChildOutcome>>;
}

export interface InitialProposal {
  status: 'initial';
}
export interface PendingProposal extends Submitted {
  status: 'pending';
}
export interface ResolvedProposal extends Submitted {
  status: 'resolved';
  resolution: Resolution;
  /** Set when the proposal went through escalation before the human resolved it. */
  escalation: EscalationMetadata | null;
}
export interface EscalatedProposal extends Submitted {
  status: 'escalated';
  resolution: Resolution;
  escalation: EscalationMetadata;
  /** The escalation desk's view of this escalation (routing, ladder position, sign-offs). */
  desk: EscalationDesk;
}

/** What the escalation desk has recorded about the open escalation. */
export interface EscalationDesk {
  /** The ProposalEscalated event id: a human resolution names it to answer this escalation. */
  escalationId: string;
  /** The payload hash a resolution must match: the proposal's, or the one bound at routing. */
  payloadHash: string | null;
  /** null until the desk took it (EscalationRouted). */
  routing: EscalationRouting | null;
  /** Who is responsible now (10.3); changes on a reassign ladder step. */
  assignees: readonly string[];
  /** Index of the next ladder step. */
  nextStep: number;
  signOffs: readonly HumanSignOff[];
}
export interface ExpiredProposal extends Submitted {
  status: 'expired';
  resolution: Resolution;
}

export type ProposalState = InitialProposal | PendingProposal | ResolvedProposal | EscalatedProposal | ExpiredProposal;
export type SubmittedProposal = Exclude<ProposalState, InitialProposal>;

export const initialProposalState: InitialProposal = Object.freeze({ status: 'initial' as const });

function cannotApply(event: ProposalEvent, state: ProposalState): AcpError {
  // A log the decider could not have produced: an infrastructure fault, not a caller error.
  return new AcpError('INTERNAL', `event ${event.type} (${event.event_id}) cannot apply to a proposal in state ${state.status}`);
}

function submittedOf(state: ProposalState, event: ProposalEvent): Submitted {
  if (state.status === 'initial') throw cannotApply(event, state);
  const { proposal, responses, respondents, tally, childOutcomes } = state;
  return { proposal, responses, respondents, tally, childOutcomes };
}

function pendingOf(state: ProposalState, event: ProposalEvent): PendingProposal {
  if (state.status !== 'pending') throw cannotApply(event, state);
  return state;
}

function escalatedOf(state: ProposalState, event: ProposalEvent & { data: { escalation_id: string } }): EscalatedProposal {
  if (state.status !== 'escalated' || state.desk.escalationId !== event.data.escalation_id) throw cannotApply(event, state);
  return state;
}

/** Folds one event. Pure and total over the logs the decider produces; anything else is INTERNAL. */
export function evolveProposal(state: ProposalState, event: ProposalEvent): ProposalState {
  switch (event.type) {
    case PROPOSAL_EVENT_TYPES.ProposalSubmitted:
      if (state.status !== 'initial') throw cannotApply(event, state);
      return {
        status: 'pending',
        proposal: event.data,
        responses: [],
        respondents: new Set(),
        tally: EMPTY_TALLY,
        childOutcomes: {},
      };
    case PROPOSAL_EVENT_TYPES.ResponseRecorded: {
      const s = pendingOf(state, event);
      const r = event.data.response;
      const exactWeight = policyWeight(s.proposal.policy?.weight_function, r).exact;
      return {
        ...s,
        responses: [...s.responses, { response: r, exactWeight }],
        respondents: new Set(s.respondents).add(r.participant_id),
        tally: addVote(s.tally, r.response_type, exactWeight),
      };
    }
    case PROPOSAL_EVENT_TYPES.ChildOutcomeRecorded: {
      const s = pendingOf(state, event);
      return { ...s, childOutcomes: { ...s.childOutcomes, [event.data.child_proposal_id]: event.data.outcome } };
    }
    case PROPOSAL_EVENT_TYPES.ProposalResolved:
      pendingOf(state, event);
      return { ...submittedOf(state, event), status: 'resolved', resolution: event.data.resolution, escalation: null };
    case PROPOSAL_EVENT_TYPES.ProposalEscalated: {
      const s = pendingOf(state, event);
      return {
        ...submittedOf(state, event),
        status: 'escalated',
        resolution: event.data.resolution,
        escalation: event.data.escalation,
        desk: {
          escalationId: event.event_id,
          payloadHash: s.proposal.payload_hash,
          routing: null,
          assignees: event.data.escalation.assigned_to ? [event.data.escalation.assigned_to] : [],
          nextStep: 0,
          signOffs: [],
        },
      };
    }
    case PROPOSAL_EVENT_TYPES.EscalationRouted: {
      const s = escalatedOf(state, event);
      const { routing, payload_hash } = event.data;
      return { ...s, desk: { ...s.desk, routing, payloadHash: payload_hash, assignees: routing.assignees } };
    }
    case PROPOSAL_EVENT_TYPES.EscalationReminded: {
      const s = escalatedOf(state, event);
      return { ...s, desk: { ...s.desk, nextStep: event.data.step + 1 } };
    }
    case PROPOSAL_EVENT_TYPES.EscalationReassigned: {
      const s = escalatedOf(state, event);
      return { ...s, desk: { ...s.desk, nextStep: event.data.step + 1, assignees: event.data.to } };
    }
    case PROPOSAL_EVENT_TYPES.EscalationSignedOff: {
      const s = escalatedOf(state, event);
      return { ...s, desk: { ...s.desk, signOffs: [...s.desk.signOffs, event.data.sign_off] } };
    }
    case PROPOSAL_EVENT_TYPES.EscalationDefaulted: {
      const s = escalatedOf(state, event);
      const resolution = event.data.resolution;
      if (resolution.outcome === 'expired') return { ...submittedOf(s, event), status: 'expired', resolution };
      return { ...submittedOf(s, event), status: 'resolved', resolution, escalation: s.escalation };
    }
    case PROPOSAL_EVENT_TYPES.ProposalExpired:
      pendingOf(state, event);
      return { ...submittedOf(state, event), status: 'expired', resolution: event.data.resolution };
    case PROPOSAL_EVENT_TYPES.EscalationResolved: {
      if (state.status !== 'escalated') throw cannotApply(event, state);
      return { ...submittedOf(state, event), status: 'resolved', resolution: event.data.resolution, escalation: state.escalation };
    }
    default: {
      const _exhaustive: never = event;
      throw new AcpError('INTERNAL', `unknown proposal event ${(_exhaustive as { type?: unknown }).type}`);
    }
  }
}

/** Folds a whole stream. */
export function foldProposal(events: readonly ProposalEvent[], from: ProposalState = initialProposalState): ProposalState {
  let state = from;
  for (const e of events) state = evolveProposal(state, e);
  return state;
}
