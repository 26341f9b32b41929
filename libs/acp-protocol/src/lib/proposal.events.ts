/**
 * Events of the `proposal-<id>` stream (past tense). Terminal events carry the spec 12.5
 * Resolution exactly as it will appear on the wire, so projections and decision events are
 * plain copies, and a replay reproduces them byte for byte.
 */
import { EVENT_SCHEMA_VERSION, PROPOSAL_EVENT_TYPES } from './contracts';
import type { ChildOutcome, EscalationMetadata, Resolution, Response } from './wire-format';
import type { ProposalDetails } from './proposal.details';
import type { EscalationRouting } from './escalation-ladder';
import type { HumanSignOff } from './human-sign-off';

export interface EventEnvelope<T extends string, D> {
  /** Derived from the command id: deriveEventId(causation_id, k). */
  event_id: string;
  type: T;
  schema_version: typeof EVENT_SCHEMA_VERSION;
  /** = the command's `now`. */
  occurred_at: string;
  actor: string;
  /** = the command's `command_id`. */
  causation_id: string;
  /** = the command's correlation_id, by default the proposal id. */
  correlation_id: string;
  data: D;
}

export type ProposalSubmitted = EventEnvelope<typeof PROPOSAL_EVENT_TYPES.ProposalSubmitted, ProposalDetails>;

export type ResponseRecorded = EventEnvelope<typeof PROPOSAL_EVENT_TYPES.ResponseRecorded, { proposal_id: string; response: Response }>;

/** approved/rejected by quorum or timeout, auto-resolution (4.2), or a parent's children (9.3). */
export type ProposalResolved = EventEnvelope<typeof PROPOSAL_EVENT_TYPES.ProposalResolved, { proposal_id: string; resolution: Resolution }>;

export type ProposalEscalated = EventEnvelope<
  typeof PROPOSAL_EVENT_TYPES.ProposalEscalated,
  { proposal_id: string; resolution: Resolution; escalation: EscalationMetadata }
>;

export type ProposalExpired = EventEnvelope<typeof PROPOSAL_EVENT_TYPES.ProposalExpired, { proposal_id: string; resolution: Resolution }>;

export type EscalationResolved = EventEnvelope<
  typeof PROPOSAL_EVENT_TYPES.EscalationResolved,
  { proposal_id: string; resolution: Resolution }
>;

export type ChildOutcomeRecorded = EventEnvelope<
  typeof PROPOSAL_EVENT_TYPES.ChildOutcomeRecorded,
  { proposal_id: string; child_proposal_id: string; outcome: ChildOutcome }
>;

/** The escalation desk took the escalation `escalation_id` (the ProposalEscalated event id). */
export type EscalationRouted = EventEnvelope<
  typeof PROPOSAL_EVENT_TYPES.EscalationRouted,
  { proposal_id: string; escalation_id: string; payload_hash: string; routing: EscalationRouting }
>;

/** Ladder step `step` (from 0): the assignees were reminded. */
export type EscalationReminded = EventEnvelope<
  typeof PROPOSAL_EVENT_TYPES.EscalationReminded,
  { proposal_id: string; escalation_id: string; step: number; due_at: string; assignees: string[] }
>;

/** Ladder step `step`: the escalation passed to a fallback assignee. */
export type EscalationReassigned = EventEnvelope<
  typeof PROPOSAL_EVENT_TYPES.EscalationReassigned,
  { proposal_id: string; escalation_id: string; step: number; due_at: string; from: string[]; to: string[] }
>;

/** One human's sign-off under an M-of-N route; the tally after it. */
export type EscalationSignedOff = EventEnvelope<
  typeof PROPOSAL_EVENT_TYPES.EscalationSignedOff,
  { proposal_id: string; escalation_id: string; sign_off: HumanSignOff; approvals: number; rejections: number; required: number }
>;

/** The ladder's last step: no human resolved in time, the default outcome (or expiry) applies. */
export type EscalationDefaulted = EventEnvelope<
  typeof PROPOSAL_EVENT_TYPES.EscalationDefaulted,
  { proposal_id: string; escalation_id: string; step: number; resolution: Resolution }
>;

export type ProposalEvent =
  | ProposalSubmitted
  | ResponseRecorded
  | ProposalResolved
  | ProposalEscalated
  | ProposalExpired
  | EscalationResolved
  | ChildOutcomeRecorded
  | EscalationRouted
  | EscalationReminded
  | EscalationReassigned
  | EscalationSignedOff
  | EscalationDefaulted;

/** The escalation desk's ladder steps (each is also a notification on `<prefix>.v1.escalations.<domain>`). */
export type EscalationLadderEvent = EscalationReminded | EscalationReassigned | EscalationDefaulted;

/** The events after which a decision event is published (spec 11.1, DESIGN section 3). */
export type TerminalProposalEvent = ProposalResolved | ProposalEscalated | ProposalExpired | EscalationResolved | EscalationDefaulted;

export function isTerminalEvent(event: ProposalEvent): event is TerminalProposalEvent {
  return (
    event.type === PROPOSAL_EVENT_TYPES.ProposalResolved ||
    event.type === PROPOSAL_EVENT_TYPES.ProposalEscalated ||
    event.type === PROPOSAL_EVENT_TYPES.ProposalExpired ||
    event.type === PROPOSAL_EVENT_TYPES.EscalationResolved ||
    event.type === PROPOSAL_EVENT_TYPES.EscalationDefaulted
  );
}

/** Events of the escalation desk (routing, ladder, sign-off), for the escalation service's projections. */
export function isEscalationDeskEvent(
  event: ProposalEvent,
): event is EscalationRouted | EscalationReminded | EscalationReassigned | EscalationSignedOff | EscalationDefaulted {
  return (
    event.type === PROPOSAL_EVENT_TYPES.EscalationRouted ||
    event.type === PROPOSAL_EVENT_TYPES.EscalationReminded ||
    event.type === PROPOSAL_EVENT_TYPES.EscalationReassigned ||
    event.type === PROPOSAL_EVENT_TYPES.EscalationSignedOff ||
    event.type === PROPOSAL_EVENT_TYPES.EscalationDefaulted
  );
}
