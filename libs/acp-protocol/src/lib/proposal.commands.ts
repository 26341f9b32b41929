import type { EligibleParticipantsSource, SecurityLabel } from './proposal.details';
/**
 * Commands on a proposal (imperative names). The edge builds them: it generates `command_id`
 * (a ULID, non-monotonic - see deriveEventId), stamps `now` from its clock, and names the
 * authenticated `actor`. The decider never reads a clock or generates an id.
 */
import { PROPOSAL_COMMAND_TYPES } from './contracts';
import type { DomainPolicyDocument } from './domain-policy';
import type { EntryType, HumanOutcome, ResponseType } from './contracts';
import type { ChildOutcome, JsonObject, QuorumPolicySpec } from './wire-format';
import type { EscalationRouting } from './escalation-ladder';

export interface CommandMetadata {
  /** ULID generated at the edge; the events' ids derive from it. */
  command_id: string;
  /** ISO 8601 UTC instant stamped at the edge. */
  now: string;
  /** Authenticated identity issuing the command (agent, service or human). */
  actor: string;
  /** Defaults to the proposal id on the resulting events. */
  correlation_id?: string;
}

export interface SubmitProposal extends CommandMetadata {
  type: typeof PROPOSAL_COMMAND_TYPES.SubmitProposal;
  data: {
    proposal_id: string;
    type: EntryType;
    domain: string;
    author: string;
    payload: JsonObject;
    quorum: number;
    created_at: string;
    expires_at: string | null;
    quorum_policy?: QuorumPolicySpec;
    depends_on?: string[];
    /** Unanimous quorum (7.3): the eligible participants, fixed at submission (sent, or from the registry). */
    eligible_participants?: string[];
    /** `registry` when the edge filled `eligible_participants` in; default `request`. */
    eligible_participants_source?: EligibleParticipantsSource;
    /** 11.3: earlier entries that caused this one; the edge has checked that they exist. */
    caused_by?: string[];
    /** Stamped by the edge (14.3/14.6); carried, never computed here. */
    payload_hash?: string;
    /** The edge's security label (14.3, 14.5): carried as it is, never interpreted here. */
    security_label?: SecurityLabel | null;
    /** The domain's policy document in force, looked up by the edge (18.1/18.2). */
    policy?: DomainPolicyDocument;
  };
}

export interface RecordResponse extends CommandMetadata {
  type: typeof PROPOSAL_COMMAND_TYPES.RecordResponse;
  data: {
    proposal_id: string;
    participant_id: string;
    response_type: ResponseType;
    confidence: number;
    /** By default from the participant registry (DESIGN section 6). */
    domain_authority: number;
    trust_score: number;
    reason?: string | null;
    /** Defaults to `now`. */
    timestamp?: string;
  };
}

/** Appended by the resolver when `pendingResolution` says the quorum policy is met. */
export interface ResolveProposal extends CommandMetadata {
  type: typeof PROPOSAL_COMMAND_TYPES.ResolveProposal;
  data: { proposal_id: string };
}

/** Issued by the sweeper at `now >= expires_at + grace`. */
export interface ExpireProposal extends CommandMetadata {
  type: typeof PROPOSAL_COMMAND_TYPES.ExpireProposal;
  data: { proposal_id: string };
}

/** Manual escalation (10.1 item 2). `reason` is free text; the metadata reason is `manual`. */
export interface EscalateProposal extends CommandMetadata {
  type: typeof PROPOSAL_COMMAND_TYPES.EscalateProposal;
  data: { proposal_id: string; reason: string; requested_by: string };
}

/**
 * Human resolution of an escalated proposal (10.2). `escalation_id` (the ProposalEscalated event
 * id) and `payload_hash` bind it to the exact escalation the human answered: a mismatch is refused.
 * Under an M-of-N sign-off route it records one human's sign-off, and resolves once M agree.
 */
export interface ResolveEscalation extends CommandMetadata {
  type: typeof PROPOSAL_COMMAND_TYPES.ResolveEscalation;
  data: {
    proposal_id: string;
    outcome: HumanOutcome;
    resolved_by: string;
    note: string | null;
    escalation_id?: string;
    payload_hash?: string;
  };
}

/**
 * The escalation desk takes an escalation: records its routing (assignees, ladder, sign-off) and
 * the payload hash a human resolution must match. Issued by the escalation service; idempotent.
 */
export interface RouteEscalation extends CommandMetadata {
  type: typeof PROPOSAL_COMMAND_TYPES.RouteEscalation;
  data: { proposal_id: string; escalation_id: string; payload_hash: string; routing: EscalationRouting };
}

/** The escalation service's ladder timer: take every ladder step due at `now`. */
export interface AdvanceEscalationLadder extends CommandMetadata {
  type: typeof PROPOSAL_COMMAND_TYPES.AdvanceEscalationLadder;
  data: { proposal_id: string; escalation_id?: string };
}

/** Appended to a parent's stream by the resolver when a child reaches a final outcome (9.3). */
export interface RecordChildOutcome extends CommandMetadata {
  type: typeof PROPOSAL_COMMAND_TYPES.RecordChildOutcome;
  data: { proposal_id: string; child_proposal_id: string; outcome: ChildOutcome };
}

export type ProposalCommand =
  | SubmitProposal
  | RecordResponse
  | ResolveProposal
  | ExpireProposal
  | EscalateProposal
  | ResolveEscalation
  | RecordChildOutcome
  | RouteEscalation
  | AdvanceEscalationLadder;
