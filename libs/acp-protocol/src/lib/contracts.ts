/**
 * Names are contracts (STYLE.md "What we take" 4): every event and command type string, every
 * closed enum of the wire format and the stream naming live here, written out literally, never
 * derived from class names.
 */

/** Spec 12.1: the only wire revision this library speaks. */
export const WIRE_SCHEMA_VERSION = '1.0' as const;
export type WireSchemaVersion = typeof WIRE_SCHEMA_VERSION;

/** Version of the event envelopes in the log (DESIGN section 3), independent of the wire revision. */
export const EVENT_SCHEMA_VERSION = 1 as const;

/** Spec 4.2 / B.1 `type`. */
export const ENTRY_TYPES = ['observation', 'hypothesis', 'proposal'] as const;
export type EntryType = (typeof ENTRY_TYPES)[number];

/** Spec 4.1 / B.1 `status`. */
export const PROPOSAL_STATUSES = ['pending', 'resolved', 'escalated', 'expired'] as const;
export type ProposalStatus = (typeof PROPOSAL_STATUSES)[number];

/** Spec 5.1: exactly two response types in the base protocol. */
export const RESPONSE_TYPES = ['endorse', 'challenge'] as const;
export type ResponseType = (typeof RESPONSE_TYPES)[number];

/** Spec 12.5 / B.1 `Resolution.outcome`. */
export const OUTCOMES = ['approved', 'rejected', 'escalated', 'expired'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** Spec 12.5 / B.1 `Resolution.trigger`: a closed enum, which is why auto-resolution reuses `quorum`. */
export const TRIGGERS = ['quorum', 'timeout', 'manual'] as const;
export type Trigger = (typeof TRIGGERS)[number];

/** Spec 10.2: a human can only approve or reject. */
export const HUMAN_OUTCOMES = ['approved', 'rejected'] as const;
export type HumanOutcome = (typeof HUMAN_OUTCOMES)[number];

/** Spec 10.3 (+ `timeout-tie`, a tie found when the proposal expired: table B.4 last row). */
export const ESCALATION_REASONS = ['tie', 'manual', 'policy', 'timeout-tie'] as const;
export type EscalationReason = (typeof ESCALATION_REASONS)[number];

/** Quorum policy kinds built in (spec 7.1-7.3); custom kinds register beside them (18.1). */
export const BUILT_IN_QUORUM_POLICY_KINDS = ['count', 'weighted', 'unanimous'] as const;
export type BuiltInQuorumPolicyKind = (typeof BUILT_IN_QUORUM_POLICY_KINDS)[number];

/** Event type strings of the `proposal-<id>` stream (past tense). */
export const PROPOSAL_EVENT_TYPES = {
  ProposalSubmitted: 'ProposalSubmitted',
  ResponseRecorded: 'ResponseRecorded',
  ProposalResolved: 'ProposalResolved',
  ProposalEscalated: 'ProposalEscalated',
  ProposalExpired: 'ProposalExpired',
  EscalationResolved: 'EscalationResolved',
  ChildOutcomeRecorded: 'ChildOutcomeRecorded',
  // Human escalation desk (spec 10.3, 10.4): routing, ladder steps, M-of-N sign-off.
  EscalationRouted: 'EscalationRouted',
  EscalationReminded: 'EscalationReminded',
  EscalationReassigned: 'EscalationReassigned',
  EscalationSignedOff: 'EscalationSignedOff',
  EscalationDefaulted: 'EscalationDefaulted',
} as const;
export type ProposalEventType = (typeof PROPOSAL_EVENT_TYPES)[keyof typeof PROPOSAL_EVENT_TYPES];

/** Command type strings (imperative). */
export const PROPOSAL_COMMAND_TYPES = {
  SubmitProposal: 'SubmitProposal',
  RecordResponse: 'RecordResponse',
  ResolveProposal: 'ResolveProposal',
  ExpireProposal: 'ExpireProposal',
  EscalateProposal: 'EscalateProposal',
  ResolveEscalation: 'ResolveEscalation',
  RecordChildOutcome: 'RecordChildOutcome',
  RouteEscalation: 'RouteEscalation',
  AdvanceEscalationLadder: 'AdvanceEscalationLadder',
} as const;
export type ProposalCommandType = (typeof PROPOSAL_COMMAND_TYPES)[keyof typeof PROPOSAL_COMMAND_TYPES];

/** Stream category of proposals (DESIGN section 3). */
export const PROPOSAL_STREAM_CATEGORY = 'proposal' as const;

/** One stream per proposal: `proposal-<proposal_id>`. */
export function proposalStream(proposalId: string): string {
  return `${PROPOSAL_STREAM_CATEGORY}-${proposalId}`;
}

/** Decision event `event_type` (B.2). */
export const DECISION_EVENT_TYPE = 'decision' as const;

/** Escalation ladder step actions: remind, hand to a fallback assignee, default outcome. */
export const LADDER_ACTIONS = ['remind', 'reassign', 'default'] as const;
export type LadderAction = (typeof LADDER_ACTIONS)[number];

/** What a ladder's last step may decide when no human answered: an outcome, or expiry. */
export const LADDER_DEFAULT_OUTCOMES = ['approved', 'rejected', 'expired'] as const;
export type LadderDefaultOutcome = (typeof LADDER_DEFAULT_OUTCOMES)[number];
