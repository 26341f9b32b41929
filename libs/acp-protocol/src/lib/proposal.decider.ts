/**
 * The proposal decider: one small function per command, gathered by `decide`. Each returns the
 * events to append (possibly none) or throws an AcpError with a stable code. No clock, no ids,
 * no I/O: `now` and `command_id` come in on the command, configuration as an argument. The
 * escalation desk's commands (human resolution, routing, the ladder) are in
 * escalation-desk.decider.ts; what both share is in proposal.decider-kernel.ts.
 */
import { PROPOSAL_COMMAND_TYPES, PROPOSAL_EVENT_TYPES, WIRE_SCHEMA_VERSION } from './contracts';
import { AcpError } from './errors';
import { parentOutcome } from './domain-scoped-resolution';
import { matchEscalationPolicy } from './human-escalation';
import type {
  EscalateProposal,
  ExpireProposal,
  ProposalCommand,
  RecordChildOutcome,
  RecordResponse,
  ResolveProposal,
  SubmitProposal,
} from './proposal.commands';
import type { ProposalEvent } from './proposal.events';
import type { PendingProposal, ProposalDetails, ProposalState } from './proposal.state';
import { isQuorumMet, quorumPolicyFor } from './quorum-policies';
import { expirationOutcome, isExpired } from './timeout-and-expiration';
import { instantOf, isUtcTimestamp } from './timestamps';
import { assertUlid } from './ids';
import { isSameResponse, isSameSubmission } from './idempotent-retry';
import { clampFactor, determineOutcome, reportedVotes } from './weighted-voting';
import { policyWeight } from './domain-policy';
import type { EscalationMetadata } from './wire-format';
import {
  DEFAULT_DECIDER_CONFIG,
  DeciderConfig,
  Draft,
  checkMetadata,
  emit,
  escalationDraft,
  requirePending,
  requireSubmitted,
  resolution,
} from './proposal.decider-kernel';
import { decideAdvanceEscalationLadder, decideResolveEscalation, decideRouteEscalation } from './escalation-desk.decider';

export { DEFAULT_DECIDER_CONFIG } from './proposal.decider-kernel';
export type { DeciderConfig } from './proposal.decider-kernel';
export { decideAdvanceEscalationLadder, decideResolveEscalation, decideRouteEscalation } from './escalation-desk.decider';

/**
 * What resolving a pending proposal by quorum yields now, or undefined if its quorum policy is
 * not met (for a parent, 9.3: until every child has a final outcome).
 */
function quorumResolution(state: PendingProposal, config: DeciderConfig, now: string, actor: string): Draft | undefined {
  const id = state.proposal.proposal_id;
  if (state.proposal.depends_on.length > 0) {
    const p = parentOutcome(state.proposal.depends_on, state.childOutcomes);
    if (p.kind === 'wait') return undefined;
    return {
      type: PROPOSAL_EVENT_TYPES.ProposalResolved,
      data: {
        proposal_id: id,
        resolution: resolution(p.outcome, 'quorum', { votes_for: p.approved, votes_against: p.against }, now, {
          child_outcomes: { ...state.childOutcomes },
        }),
      },
    };
  }
  if (!isQuorumMet(state, config.quorumPolicies)) return undefined;
  const votes = reportedVotes(state.tally);
  const outcome = determineOutcome(state.tally);
  if (outcome === 'escalated') {
    // 10.1 item 1 / C.4: a tie at quorum escalates with trigger quorum
    return escalationDraft(id, resolution('escalated', 'quorum', votes, now), { reason: 'tie', escalated_at: now, requested_by: actor });
  }
  return { type: PROPOSAL_EVENT_TYPES.ProposalResolved, data: { proposal_id: id, resolution: resolution(outcome, 'quorum', votes, now) } };
}

// ---- one function per command ----

/**
 * The rules of a submission that need no state (7.1 quorum, timestamps, 9.3 and 11.3 link
 * shapes): what ACP refuses of an entry whatever its log holds, for a writer that must know
 * before it posts (the Council's bridge posts two entries, the second caused by the first).
 */
export function checkSubmission(
  d: Pick<SubmitProposal['data'], 'proposal_id' | 'type' | 'quorum' | 'created_at' | 'expires_at' | 'depends_on' | 'caused_by'>,
): void {
  if (!Number.isSafeInteger(d.quorum) || d.quorum < 1) {
    throw new AcpError('SCHEMA_VIOLATION', 'quorum must be an integer >= 1 (7.1)', 'quorum');
  }
  if (!isUtcTimestamp(d.created_at)) throw new AcpError('SCHEMA_VIOLATION', 'created_at must be an ISO 8601 UTC timestamp', 'created_at');
  if (d.expires_at !== null) {
    if (!isUtcTimestamp(d.expires_at))
      throw new AcpError('SCHEMA_VIOLATION', 'expires_at must be an ISO 8601 UTC timestamp or null', 'expires_at');
    if (instantOf(d.expires_at) <= instantOf(d.created_at)) {
      throw new AcpError('SCHEMA_VIOLATION', 'expires_at must be later than created_at', 'expires_at');
    }
  }
  const dependsOn = d.depends_on ?? [];
  dependsOn.forEach((id, i) => assertUlid(id, `depends_on.${i}`));
  if (dependsOn.length > 0) {
    if (d.type !== 'proposal')
      throw new AcpError('SCHEMA_VIOLATION', 'only entries of type proposal can depend on children (9.3)', 'depends_on');
    if (new Set(dependsOn).size !== dependsOn.length)
      throw new AcpError('SCHEMA_VIOLATION', 'depends_on must not repeat an id', 'depends_on');
    if (dependsOn.includes(d.proposal_id))
      throw new AcpError('SCHEMA_VIOLATION', 'depends_on must not contain the proposal itself', 'depends_on');
  }
  const causedBy = d.caused_by ?? [];
  causedBy.forEach((id, i) => assertUlid(id, `caused_by.${i}`));
  if (new Set(causedBy).size !== causedBy.length) throw new AcpError('SCHEMA_VIOLATION', 'caused_by must not repeat an id', 'caused_by');
  if (causedBy.includes(d.proposal_id)) throw new AcpError('SCHEMA_VIOLATION', 'caused_by must not contain the entry itself', 'caused_by');
}

/** 4.3, 14.4 (an identical retry is not a duplicate: nothing to do), 4.2, 10.1 item 3, 11.3. */
export function decideSubmitProposal(command: SubmitProposal, state: ProposalState, config: DeciderConfig): ProposalEvent[] {
  checkMetadata(command);
  const d = command.data;
  assertUlid(d.proposal_id, 'proposal_id');
  if (state.status !== 'initial') {
    // A retry of the same proposal by its author changes nothing; the edge replies from the state.
    if (isSameSubmission(state.proposal, command)) return [];
    throw new AcpError('DUPLICATE_PROPOSAL_ID', `proposal_id ${d.proposal_id} already exists with other content (14.4)`, 'proposal_id');
  }
  checkSubmission(d);
  const dependsOn = d.depends_on ?? [];
  const causedBy = d.caused_by ?? [];
  const details: ProposalDetails = {
    schema_version: WIRE_SCHEMA_VERSION,
    proposal_id: d.proposal_id,
    type: d.type,
    domain: d.domain,
    author: d.author,
    payload: d.payload,
    quorum: d.quorum,
    created_at: d.created_at,
    expires_at: d.expires_at,
    quorum_policy: d.quorum_policy ?? null,
    depends_on: [...dependsOn],
    eligible_participants: d.eligible_participants ? [...d.eligible_participants] : null,
    ...(d.eligible_participants && d.eligible_participants_source === 'registry'
      ? { eligible_participants_source: 'registry' as const }
      : {}),
    ...(causedBy.length > 0 ? { caused_by: [...causedBy] } : {}),
    payload_hash: d.payload_hash ?? null,
    security_label: d.security_label ? { ...d.security_label } : null,
    ...(d.policy ? { policy: d.policy } : {}),
  };
  if (dependsOn.length === 0) quorumPolicyFor(details, config.quorumPolicies).validate?.(details);

  const drafts: Draft[] = [{ type: PROPOSAL_EVENT_TYPES.ProposalSubmitted, data: details }];
  const zero = { votes_for: 0, votes_against: 0 };
  if (d.type === 'observation' || d.type === 'hypothesis') {
    // 4.2: no consensus required. Recorded as approved by (vacuous) quorum, flagged auto_resolved.
    drafts.push({
      type: PROPOSAL_EVENT_TYPES.ProposalResolved,
      data: { proposal_id: d.proposal_id, resolution: resolution('approved', 'quorum', zero, command.now, { auto_resolved: true }) },
    });
  }
  const rule = matchEscalationPolicy(config.escalationPolicies, details);
  if (rule) {
    const escalation: EscalationMetadata = {
      reason: 'policy',
      escalated_at: command.now,
      requested_by: `policy:${rule.id}`,
      policy_id: rule.id,
      ...(rule.assign_to ? { assigned_to: rule.assign_to } : {}),
    };
    // 10.1 item 2 counts a system policy's request as a manual trigger.
    drafts.push(escalationDraft(d.proposal_id, resolution('escalated', 'manual', zero, command.now), escalation));
  }
  return emit(command, d.proposal_id, drafts);
}

/** 5.3 (one per participant - a retry of it is nothing to do -, no self-response, pending only), 6.1, DESIGN 3 (closed at quorum). */
export function decideRecordResponse(command: RecordResponse, state: ProposalState, config: DeciderConfig): ProposalEvent[] {
  checkMetadata(command);
  const d = command.data;
  const s = requireSubmitted(state, d.proposal_id);
  if (d.participant_id === s.proposal.author) {
    throw new AcpError('SELF_RESPONSE', `participant ${d.participant_id} is the author and cannot respond (5.3)`, 'participant_id');
  }
  if (s.respondents.has(d.participant_id)) {
    // A retry of the recorded response is the same success, whatever has happened since.
    const first = s.responses.find((r) => r.response.participant_id === d.participant_id);
    if (first && isSameResponse(first.response, d)) return [];
    throw new AcpError(
      'DUPLICATE_RESPONSE',
      `participant ${d.participant_id} has already responded; the first response stands (5.3, 15.3)`,
      'participant_id',
    );
  }
  const p = requirePending(s, d.proposal_id);
  if (p.proposal.depends_on.length > 0) {
    throw new AcpError(
      'SCHEMA_VIOLATION',
      `proposal ${d.proposal_id} is a parent (9.3): it is decided by its child proposals and takes no responses`,
      'proposal_id',
    );
  }
  if (isQuorumMet(p, config.quorumPolicies)) {
    throw new AcpError(
      'PROPOSAL_NOT_PENDING',
      `proposal ${d.proposal_id} has already met its quorum; its resolution is pending and it takes no more responses`,
      'proposal_id',
    );
  }
  // 8.1: past expires_at the proposal has expired, whether or not the sweeper has recorded it;
  // the grace only delays the sweeper (clock skew), never extends the time to respond.
  if (isExpired(p.proposal.expires_at, command.now)) {
    throw new AcpError(
      'PROPOSAL_NOT_PENDING',
      `proposal ${d.proposal_id} expired at ${p.proposal.expires_at}; it takes no more responses (8.1)`,
      'expires_at',
    );
  }
  const timestamp = d.timestamp ?? command.now;
  if (!isUtcTimestamp(timestamp)) throw new AcpError('SCHEMA_VIOLATION', 'timestamp must be an ISO 8601 UTC timestamp', 'timestamp');
  if (instantOf(timestamp) > instantOf(command.now) + BigInt(Math.max(0, Math.trunc(config.maxResponseTimestampAheadMs))) * 1_000_000n) {
    const ahead = config.maxResponseTimestampAheadMs / 1000;
    throw new AcpError(
      'SCHEMA_VIOLATION',
      `timestamp ${timestamp} is in the future (more than ${ahead} s ahead of the service's clock)`,
      'timestamp',
    );
  }
  // 6.1: the factors are clamped independently; the recorded response holds the clamped values
  // and the weight computed from them, never a client's weight.
  const factors = {
    confidence: clampFactor(d.confidence),
    domain_authority: clampFactor(d.domain_authority),
    trust_score: clampFactor(d.trust_score),
  };
  const { weight } = policyWeight(p.proposal.policy?.weight_function, factors);
  return emit(command, d.proposal_id, [
    {
      type: PROPOSAL_EVENT_TYPES.ResponseRecorded,
      data: {
        proposal_id: d.proposal_id,
        response: {
          schema_version: WIRE_SCHEMA_VERSION,
          participant_id: d.participant_id,
          response_type: d.response_type,
          ...factors,
          weight,
          reason: d.reason ?? null,
          timestamp,
        },
      },
    },
  ]);
}

/** 3 (Resolve), 6.3, 10.1 item 1, 9.3: appended by the resolver once the quorum policy is met. */
export function decideResolveProposal(command: ResolveProposal, state: ProposalState, config: DeciderConfig): ProposalEvent[] {
  checkMetadata(command);
  const p = requirePending(state, command.data.proposal_id);
  const draft = quorumResolution(p, config, command.now, command.actor);
  if (!draft) {
    const why = p.proposal.depends_on.length > 0 ? 'some child proposals have no final outcome yet (9.3)' : 'its quorum policy is not met';
    throw new AcpError('CONFLICT', `proposal ${command.data.proposal_id} cannot resolve: ${why}`, 'proposal_id');
  }
  return emit(command, command.data.proposal_id, [draft]);
}

/** 8.1, 8.2 (table B.4), 7.4 (quorum before timeout), 15.5 (grace). */
export function decideExpireProposal(command: ExpireProposal, state: ProposalState, config: DeciderConfig): ProposalEvent[] {
  checkMetadata(command);
  const id = command.data.proposal_id;
  const p = requirePending(state, id);
  // 7.4: if the quorum is met, the trigger is quorum, whatever the clock says.
  const byQuorum = quorumResolution(p, config, command.now, command.actor);
  if (byQuorum) return emit(command, id, [byQuorum]);
  if (p.proposal.expires_at === null) {
    throw new AcpError('CONFLICT', `proposal ${id} has no expires_at and never expires (8.4)`, 'proposal_id');
  }
  if (!isExpired(p.proposal.expires_at, command.now, config.expiryGraceMs)) {
    throw new AcpError(
      'CONFLICT',
      `proposal ${id} is not expired yet at ${command.now} (expires_at ${p.proposal.expires_at} + grace ${config.expiryGraceMs} ms)`,
      'proposal_id',
    );
  }
  const votes = reportedVotes(p.tally);
  const result = expirationOutcome(p.responses.length, p.tally);
  if (result.outcome === 'expired') {
    return emit(command, id, [
      {
        type: PROPOSAL_EVENT_TYPES.ProposalExpired,
        data: { proposal_id: id, resolution: resolution('expired', 'timeout', votes, command.now) },
      },
    ]);
  }
  if (result.outcome === 'escalated') {
    return emit(command, id, [
      escalationDraft(id, resolution('escalated', 'timeout', votes, command.now), {
        reason: 'timeout-tie',
        escalated_at: command.now,
        requested_by: command.actor,
      }),
    ]);
  }
  return emit(command, id, [
    {
      type: PROPOSAL_EVENT_TYPES.ProposalResolved,
      data: { proposal_id: id, resolution: resolution(result.outcome, 'timeout', votes, command.now) },
    },
  ]);
}

/** 10.1 item 2: manual escalation of a pending proposal whose outcome is not yet determined. */
export function decideEscalateProposal(command: EscalateProposal, state: ProposalState, config: DeciderConfig): ProposalEvent[] {
  checkMetadata(command);
  const id = command.data.proposal_id;
  const p = requirePending(state, id);
  if (quorumResolution(p, config, command.now, command.actor)) {
    throw new AcpError(
      'PROPOSAL_NOT_PENDING',
      `proposal ${id} has already met its quorum; its outcome is decided and it cannot be escalated`,
      'proposal_id',
    );
  }
  return emit(command, id, [
    escalationDraft(id, resolution('escalated', 'manual', reportedVotes(p.tally), command.now), {
      reason: 'manual',
      escalated_at: command.now,
      requested_by: command.data.requested_by,
      note: command.data.reason,
    }),
  ]);
}

/** 9.3: a child's final outcome, recorded on its parent. Recording the same outcome again is a no-op. */
export function decideRecordChildOutcome(command: RecordChildOutcome, state: ProposalState, _config: DeciderConfig): ProposalEvent[] {
  checkMetadata(command);
  const d = command.data;
  const p = requirePending(state, d.proposal_id);
  if (!p.proposal.depends_on.includes(d.child_proposal_id)) {
    throw new AcpError('SCHEMA_VIOLATION', `${d.child_proposal_id} is not in depends_on of ${d.proposal_id}`, 'child_proposal_id');
  }
  if (d.outcome !== 'approved' && d.outcome !== 'rejected' && d.outcome !== 'expired') {
    throw new AcpError('SCHEMA_VIOLATION', 'a child outcome is approved, rejected or expired (an escalated child has none yet)', 'outcome');
  }
  const known = p.childOutcomes[d.child_proposal_id];
  if (known === d.outcome) return [];
  if (known !== undefined) {
    throw new AcpError('CONFLICT', `child ${d.child_proposal_id} already recorded as ${known}, not ${d.outcome}`, 'outcome');
  }
  return emit(command, d.proposal_id, [
    {
      type: PROPOSAL_EVENT_TYPES.ChildOutcomeRecorded,
      data: { proposal_id: d.proposal_id, child_proposal_id: d.child_proposal_id, outcome: d.outcome },
    },
  ]);
}

/** decide(command, state) -> events, or a thrown AcpError. */
export function decide(command: ProposalCommand, state: ProposalState, config: DeciderConfig = DEFAULT_DECIDER_CONFIG): ProposalEvent[] {
  switch (command.type) {
    case PROPOSAL_COMMAND_TYPES.SubmitProposal:
      return decideSubmitProposal(command, state, config);
    case PROPOSAL_COMMAND_TYPES.RecordResponse:
      return decideRecordResponse(command, state, config);
    case PROPOSAL_COMMAND_TYPES.ResolveProposal:
      return decideResolveProposal(command, state, config);
    case PROPOSAL_COMMAND_TYPES.ExpireProposal:
      return decideExpireProposal(command, state, config);
    case PROPOSAL_COMMAND_TYPES.EscalateProposal:
      return decideEscalateProposal(command, state, config);
    case PROPOSAL_COMMAND_TYPES.ResolveEscalation:
      return decideResolveEscalation(command, state, config);
    case PROPOSAL_COMMAND_TYPES.RecordChildOutcome:
      return decideRecordChildOutcome(command, state, config);
    case PROPOSAL_COMMAND_TYPES.RouteEscalation:
      return decideRouteEscalation(command, state, config);
    case PROPOSAL_COMMAND_TYPES.AdvanceEscalationLadder:
      return decideAdvanceEscalationLadder(command, state, config);
    default: {
      const _exhaustive: never = command;
      throw new AcpError('SCHEMA_VIOLATION', `unknown command type ${String((_exhaustive as { type?: unknown }).type)}`, 'type');
    }
  }
}
