/**
 * What the proposal decider and the escalation desk's decider share: their configuration, the
 * event envelope, the metadata checks and the state guards.
 */
import { EVENT_SCHEMA_VERSION, PROPOSAL_EVENT_TYPES, WIRE_SCHEMA_VERSION } from './contracts';
import { AcpError } from './errors';
import type { EscalationPolicyRule } from './human-escalation';
import type { CommandMetadata } from './proposal.commands';
import type { EventEnvelope, ProposalEvent } from './proposal.events';
import type { EscalatedProposal, PendingProposal, ProposalState } from './proposal.state';
import { DEFAULT_QUORUM_POLICIES, QuorumPolicyRegistry } from './quorum-policies';
import { isUtcTimestamp } from './timestamps';
import { assertUlid, deriveEventId } from './ids';
import type { EscalationMetadata, Resolution } from './wire-format';

/** Configuration of the decider, validated once at service start and handed in. */
export interface DeciderConfig {
  /** 15.5: grace added to expires_at before a proposal may expire (ms, >= 0). */
  expiryGraceMs: number;
  /** 10.1 item 3: rules that escalate a proposal on submission. */
  escalationPolicies: readonly EscalationPolicyRule[];
  /** 7 / 18.1: quorum policies by kind. */
  quorumPolicies: QuorumPolicyRegistry;
  /**
   * How far a response's client-chosen `timestamp` may be ahead of the service's `now` (ms): one
   * further ahead would postdate anything. The clock skew accepted on signed requests.
   */
  maxResponseTimestampAheadMs: number;
}

export const DEFAULT_DECIDER_CONFIG: DeciderConfig = Object.freeze({
  expiryGraceMs: 0,
  escalationPolicies: [],
  quorumPolicies: DEFAULT_QUORUM_POLICIES,
  maxResponseTimestampAheadMs: 30_000,
});

export type Draft = { [E in ProposalEvent as E['type']]: { type: E['type']; data: E['data'] } }[ProposalEvent['type']];

/** Wraps drafts in envelopes; the k-th event (from 1) gets deriveEventId(command_id, k). */
export function emit(command: CommandMetadata, proposalId: string, drafts: Draft[]): ProposalEvent[] {
  return drafts.map(
    (d, i) =>
      ({
        event_id: deriveEventId(command.command_id, i + 1),
        type: d.type,
        schema_version: EVENT_SCHEMA_VERSION,
        occurred_at: command.now,
        actor: command.actor,
        causation_id: command.command_id,
        correlation_id: command.correlation_id ?? proposalId,
        data: d.data,
      }) as EventEnvelope<string, unknown> as ProposalEvent,
  );
}

export function checkMetadata(command: CommandMetadata): void {
  assertUlid(command.command_id, 'command_id');
  if (!isUtcTimestamp(command.now)) throw new AcpError('SCHEMA_VIOLATION', 'now must be an ISO 8601 UTC timestamp', 'now');
  if (typeof command.actor !== 'string' || command.actor.length === 0) {
    throw new AcpError('SCHEMA_VIOLATION', 'actor is required', 'actor');
  }
}

export function requireSubmitted(state: ProposalState, proposalId: string): Exclude<ProposalState, { status: 'initial' }> {
  if (state.status === 'initial') throw new AcpError('PROPOSAL_NOT_FOUND', `proposal ${proposalId} does not exist`, 'proposal_id');
  return state;
}

export function requirePending(state: ProposalState, proposalId: string): PendingProposal {
  const s = requireSubmitted(state, proposalId);
  if (s.status !== 'pending') {
    throw new AcpError('PROPOSAL_NOT_PENDING', `proposal ${proposalId} is ${s.status}, not pending`, 'proposal_id');
  }
  return s;
}

export function resolution(
  outcome: Resolution['outcome'],
  trigger: Resolution['trigger'],
  votes: { votes_for: number; votes_against: number },
  decidedAt: string,
  extra: Partial<Resolution> = {},
): Resolution {
  return { schema_version: WIRE_SCHEMA_VERSION, outcome, trigger, ...votes, decided_at: decidedAt, ...extra };
}

export function escalationDraft(proposalId: string, res: Resolution, escalation: EscalationMetadata): Draft {
  return {
    type: PROPOSAL_EVENT_TYPES.ProposalEscalated,
    data: { proposal_id: proposalId, resolution: { ...res, escalation }, escalation },
  };
}

export function requireEscalated(state: ProposalState, proposalId: string, escalationId: string | undefined): EscalatedProposal {
  const s = requireSubmitted(state, proposalId);
  if (s.status !== 'escalated') {
    throw new AcpError(
      'NOT_ESCALATED',
      `proposal ${proposalId} is ${s.status}; only an escalated proposal takes a human resolution`,
      'proposal_id',
    );
  }
  if (escalationId !== undefined && escalationId !== s.desk.escalationId) {
    throw new AcpError(
      'NOT_ESCALATED',
      `escalation ${escalationId} is not the open escalation of proposal ${proposalId} (${s.desk.escalationId})`,
      'escalation_id',
    );
  }
  return s;
}
