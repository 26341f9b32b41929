/**
 * The proposal decider: one small function per command, gathered by `decide`. Each returns the
 * events to append (possibly none) or throws an AcpError with a stable code. No clock, no ids,
 * no I/O: `now` and `command_id` come in on the command, configuration as an argument.
 */
import { EVENT_SCHEMA_VERSION, PROPOSAL_COMMAND_TYPES, PROPOSAL_EVENT_TYPES, WIRE_SCHEMA_VERSION } from './contracts';
import { AcpError } from './errors';
import { parentOutcome } from './domain-scoped-resolution';
import { EscalationPolicyRule, matchEscalationPolicy } from './human-escalation';
import { dueLadderSteps, ladderStepDueAt } from './escalation-ladder';
import type { EscalationRouting } from './escalation-ladder';
import { signOffDecision } from './human-sign-off';
import type {
  AdvanceEscalationLadder,
  RouteEscalation,
  EscalateProposal,
  ExpireProposal,
  ProposalCommand,
  RecordChildOutcome,
  RecordResponse,
  ResolveEscalation,
  ResolveProposal,
  SubmitProposal,
  CommandMetadata,
} from './proposal.commands';
import type { EventEnvelope, ProposalEvent } from './proposal.events';
import type { EscalatedProposal, PendingProposal, ProposalDetails, ProposalState } from './proposal.state';
import { DEFAULT_QUORUM_POLICIES, QuorumPolicyRegistry, isQuorumMet, quorumPolicyFor } from './quorum-policies';
import { expirationOutcome, isExpired } from './timeout-and-expiration';
import { instantOf, isUtcTimestamp } from './timestamps';
import { assertUlid, deriveEventId } from './ids';
import { clampFactor, computeWeight, determineOutcome, reportedVotes } from './weighted-voting';
import type { EscalationMetadata, Resolution } from './wire-format';

/** Configuration of the decider, validated once at service start and handed in. */
export interface DeciderConfig {
  /** 15.5: grace added to expires_at before a proposal may expire (ms, >= 0). */
  expiryGraceMs: number;
  /** 10.1 item 3: rules that escalate a proposal on submission. */
  escalationPolicies: readonly EscalationPolicyRule[];
  /** 7 / 18.1: quorum policies by kind. */
  quorumPolicies: QuorumPolicyRegistry;
}

export const DEFAULT_DECIDER_CONFIG: DeciderConfig = Object.freeze({
  expiryGraceMs: 0,
  escalationPolicies: [],
  quorumPolicies: DEFAULT_QUORUM_POLICIES,
});

type Draft = { [E in ProposalEvent as E['type']]: { type: E['type']; data: E['data'] } }[ProposalEvent['type']];

/** Wraps drafts in envelopes; the k-th event (from 1) gets deriveEventId(command_id, k). */
function emit(command: CommandMetadata, proposalId: string, drafts: Draft[]): ProposalEvent[] {
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

function checkMetadata(command: CommandMetadata): void {
  assertUlid(command.command_id, 'command_id');
  if (!isUtcTimestamp(command.now)) throw new AcpError('SCHEMA_VIOLATION', 'now must be an ISO 8601 UTC timestamp', 'now');
  if (typeof command.actor !== 'string' || command.actor.length === 0) {
    throw new AcpError('SCHEMA_VIOLATION', 'actor is required', 'actor');
  }
}

function requireSubmitted(state: ProposalState, proposalId: string): Exclude<ProposalState, { status: 'initial' }> {
  if (state.status === 'initial') throw new AcpError('PROPOSAL_NOT_FOUND', `proposal ${proposalId} does not exist`, 'proposal_id');
  return state;
}

function requirePending(state: ProposalState, proposalId: string): PendingProposal {
  const s = requireSubmitted(state, proposalId);
  if (s.status !== 'pending') {
    throw new AcpError('PROPOSAL_NOT_PENDING', `proposal ${proposalId} is ${s.status}, not pending`, 'proposal_id');
  }
  return s;
}

function resolution(
  outcome: Resolution['outcome'],
  trigger: Resolution['trigger'],
  votes: { votes_for: number; votes_against: number },
  decidedAt: string,
  extra: Partial<Resolution> = {},
): Resolution {
  return { schema_version: WIRE_SCHEMA_VERSION, outcome, trigger, ...votes, decided_at: decidedAt, ...extra };
}

function escalationDraft(proposalId: string, res: Resolution, escalation: EscalationMetadata): Draft {
  return {
    type: PROPOSAL_EVENT_TYPES.ProposalEscalated,
    data: { proposal_id: proposalId, resolution: { ...res, escalation }, escalation },
  };
}

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

/** 4.3, 14.4, 4.2, 10.1 item 3. */
export function decideSubmitProposal(command: SubmitProposal, state: ProposalState, config: DeciderConfig): ProposalEvent[] {
  checkMetadata(command);
  const d = command.data;
  assertUlid(d.proposal_id, 'proposal_id');
  if (state.status !== 'initial') {
    throw new AcpError('DUPLICATE_PROPOSAL_ID', `proposal_id ${d.proposal_id} already exists (14.4)`, 'proposal_id');
  }
  if (!Number.isSafeInteger(d.quorum) || d.quorum < 1) {
    throw new AcpError('SCHEMA_VIOLATION', 'quorum must be an integer >= 1 (7.1)', 'quorum');
  }
  if (!isUtcTimestamp(d.created_at)) throw new AcpError('SCHEMA_VIOLATION', 'created_at must be an ISO 8601 UTC timestamp', 'created_at');
  if (d.expires_at !== null) {
    if (!isUtcTimestamp(d.expires_at)) throw new AcpError('SCHEMA_VIOLATION', 'expires_at must be an ISO 8601 UTC timestamp or null', 'expires_at');
    if (instantOf(d.expires_at) <= instantOf(d.created_at)) {
      throw new AcpError('SCHEMA_VIOLATION', 'expires_at must be later than created_at', 'expires_at');
    }
  }
  const dependsOn = d.depends_on ?? [];
  dependsOn.forEach((id, i) => assertUlid(id, `depends_on.${i}`));
  if (dependsOn.length > 0) {
    if (d.type !== 'proposal') throw new AcpError('SCHEMA_VIOLATION', 'only entries of type proposal can depend on children (9.3)', 'depends_on');
    if (new Set(dependsOn).size !== dependsOn.length) throw new AcpError('SCHEMA_VIOLATION', 'depends_on must not repeat an id', 'depends_on');
    if (dependsOn.includes(d.proposal_id)) throw new AcpError('SCHEMA_VIOLATION', 'depends_on must not contain the proposal itself', 'depends_on');
  }
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
    payload_hash: d.payload_hash ?? null,
    security_label: d.security_label ? { ...d.security_label } : null,
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

/** 5.3 (one per participant, no self-response, pending only), 6.1, DESIGN 3 (closed at quorum). */
export function decideRecordResponse(command: RecordResponse, state: ProposalState, config: DeciderConfig): ProposalEvent[] {
  checkMetadata(command);
  const d = command.data;
  const s = requireSubmitted(state, d.proposal_id);
  if (d.participant_id === s.proposal.author) {
    throw new AcpError('SELF_RESPONSE', `participant ${d.participant_id} is the author and cannot respond (5.3)`, 'participant_id');
  }
  if (s.respondents.has(d.participant_id)) {
    throw new AcpError('DUPLICATE_RESPONSE', `participant ${d.participant_id} has already responded; the first response stands (5.3, 15.3)`, 'participant_id');
  }
  const p = requirePending(s, d.proposal_id);
  if (p.proposal.depends_on.length > 0) {
    throw new AcpError('SCHEMA_VIOLATION', `proposal ${d.proposal_id} is a parent (9.3): it is decided by its child proposals and takes no responses`, 'proposal_id');
  }
  if (isQuorumMet(p, config.quorumPolicies)) {
    throw new AcpError('PROPOSAL_NOT_PENDING', `proposal ${d.proposal_id} has already met its quorum; its resolution is pending and it takes no more responses`, 'proposal_id');
  }
  // 8.1: past expires_at the proposal has expired, whether or not the sweeper has recorded it;
  // the grace only delays the sweeper (clock skew), never extends the time to respond.
  if (isExpired(p.proposal.expires_at, command.now)) {
    throw new AcpError('PROPOSAL_NOT_PENDING', `proposal ${d.proposal_id} expired at ${p.proposal.expires_at}; it takes no more responses (8.1)`, 'expires_at');
  }
  const timestamp = d.timestamp ?? command.now;
  if (!isUtcTimestamp(timestamp)) throw new AcpError('SCHEMA_VIOLATION', 'timestamp must be an ISO 8601 UTC timestamp', 'timestamp');
  // 6.1: the factors are clamped independently; the recorded response holds the clamped values
  // and the weight computed from them, never a client's weight.
  const factors = {
    confidence: clampFactor(d.confidence),
    domain_authority: clampFactor(d.domain_authority),
    trust_score: clampFactor(d.trust_score),
  };
  const { weight } = computeWeight(factors);
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
    throw new AcpError('CONFLICT', `proposal ${id} is not expired yet at ${command.now} (expires_at ${p.proposal.expires_at} + grace ${config.expiryGraceMs} ms)`, 'proposal_id');
  }
  const votes = reportedVotes(p.tally);
  const result = expirationOutcome(p.responses.length, p.tally);
  if (result.outcome === 'expired') {
    return emit(command, id, [
      { type: PROPOSAL_EVENT_TYPES.ProposalExpired, data: { proposal_id: id, resolution: resolution('expired', 'timeout', votes, command.now) } },
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
    { type: PROPOSAL_EVENT_TYPES.ProposalResolved, data: { proposal_id: id, resolution: resolution(result.outcome, 'timeout', votes, command.now) } },
  ]);
}

/** 10.1 item 2: manual escalation of a pending proposal whose outcome is not yet determined. */
export function decideEscalateProposal(command: EscalateProposal, state: ProposalState, config: DeciderConfig): ProposalEvent[] {
  checkMetadata(command);
  const id = command.data.proposal_id;
  const p = requirePending(state, id);
  if (quorumResolution(p, config, command.now, command.actor)) {
    throw new AcpError('PROPOSAL_NOT_PENDING', `proposal ${id} has already met its quorum; its outcome is decided and it cannot be escalated`, 'proposal_id');
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

function requireEscalated(state: ProposalState, proposalId: string, escalationId: string | undefined): EscalatedProposal {
  const s = requireSubmitted(state, proposalId);
  if (s.status !== 'escalated') {
    throw new AcpError('NOT_ESCALATED', `proposal ${proposalId} is ${s.status}; only an escalated proposal takes a human resolution`, 'proposal_id');
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

/**
 * 10.2: a human sets approved or rejected, trigger manual. Only from escalated, and only for the
 * escalation and payload the human saw (`escalation_id`, `payload_hash`, when given). Under an
 * M-of-N sign-off route, one human's sign-off is recorded, and the proposal resolves once M of
 * the named humans agree (or at once on a veto, when the route allows one).
 */
export function decideResolveEscalation(command: ResolveEscalation, state: ProposalState, _config: DeciderConfig): ProposalEvent[] {
  checkMetadata(command);
  const d = command.data;
  const s = requireEscalated(state, d.proposal_id, d.escalation_id);
  if (d.outcome !== 'approved' && d.outcome !== 'rejected') {
    throw new AcpError('SCHEMA_VIOLATION', 'outcome must be approved or rejected', 'outcome');
  }
  if (d.payload_hash !== undefined) {
    const expected = s.desk.payloadHash;
    if (expected === null) {
      throw new AcpError('CONFLICT', `escalation of ${d.proposal_id} is not bound to a payload hash yet; retry`, 'payload_hash');
    }
    if (d.payload_hash !== expected) {
      throw new AcpError('CONFLICT', `payload_hash ${d.payload_hash} is not the hash of proposal ${d.proposal_id}'s payload (${expected})`, 'payload_hash');
    }
  }
  const votes = { votes_for: s.resolution.votes_for, votes_against: s.resolution.votes_against };
  const note = d.note ?? null;
  const rule = s.desk.routing?.sign_off ?? null;
  if (rule === null) {
    return emit(command, d.proposal_id, [
      {
        type: PROPOSAL_EVENT_TYPES.EscalationResolved,
        data: {
          proposal_id: d.proposal_id,
          resolution: resolution(d.outcome, 'manual', votes, command.now, { resolved_by: d.resolved_by, note, escalation: s.escalation }),
        },
      },
    ]);
  }
  if (!rule.of.includes(d.resolved_by)) {
    throw new AcpError('FORBIDDEN', `${d.resolved_by} is not one of the humans whose sign-off counts for this escalation (${rule.of.join(', ')})`, 'resolved_by');
  }
  if (s.desk.signOffs.some((x) => x.by === d.resolved_by)) {
    throw new AcpError('DUPLICATE_RESPONSE', `${d.resolved_by} has already signed off this escalation; the first sign-off stands`, 'resolved_by');
  }
  const signOff = { by: d.resolved_by, outcome: d.outcome, note, at: command.now };
  const signOffs = [...s.desk.signOffs, signOff];
  const decision = signOffDecision(rule, signOffs);
  const approvals = signOffs.filter((x) => x.outcome === 'approved').length;
  const drafts: Draft[] = [
    {
      type: PROPOSAL_EVENT_TYPES.EscalationSignedOff,
      data: {
        proposal_id: d.proposal_id,
        escalation_id: s.desk.escalationId,
        sign_off: signOff,
        approvals,
        rejections: signOffs.length - approvals,
        required: rule.required,
      },
    },
  ];
  if (decision.kind === 'resolve') {
    drafts.push({
      type: PROPOSAL_EVENT_TYPES.EscalationResolved,
      data: {
        proposal_id: d.proposal_id,
        resolution: resolution(decision.outcome, 'manual', votes, command.now, {
          resolved_by: d.resolved_by,
          note,
          escalation: s.escalation,
          sign_offs: signOffs,
          ...(decision.by === 'veto' ? { vetoed: true as const } : {}),
        }),
      },
    });
  }
  return emit(command, d.proposal_id, drafts);
}

function checkRouting(routing: EscalationRouting): void {
  const names = (v: unknown) => Array.isArray(v) && v.every((n) => typeof n === 'string' && n.length > 0);
  if (typeof routing !== 'object' || routing === null || !names(routing.assignees) || !Array.isArray(routing.ladder)) {
    throw new AcpError('SCHEMA_VIOLATION', 'routing must name assignees and a ladder', 'routing');
  }
  routing.ladder.forEach((step, i) => {
    if (!Number.isSafeInteger(step.after_ms) || step.after_ms < 0) {
      throw new AcpError('SCHEMA_VIOLATION', 'after_ms must be an integer >= 0', `routing.ladder.${i}.after_ms`);
    }
    if (step.action === 'default' && i !== routing.ladder.length - 1) {
      throw new AcpError('SCHEMA_VIOLATION', 'default must be the last ladder step', `routing.ladder.${i}.action`);
    }
  });
  const so = routing.sign_off;
  if (so !== null && (!names(so.of) || !Number.isSafeInteger(so.required) || so.required < 1 || so.required > so.of.length)) {
    throw new AcpError('SCHEMA_VIOLATION', 'sign_off needs 1 <= required <= the number of humans in of', 'routing.sign_off');
  }
}

/** The escalation desk takes the open escalation: routing and payload hash are fixed from here on. */
export function decideRouteEscalation(command: RouteEscalation, state: ProposalState, _config: DeciderConfig): ProposalEvent[] {
  checkMetadata(command);
  const d = command.data;
  const s = requireEscalated(state, d.proposal_id, d.escalation_id);
  if (s.desk.routing !== null) return [];
  if (typeof d.payload_hash !== 'string' || d.payload_hash.length === 0) {
    throw new AcpError('SCHEMA_VIOLATION', 'payload_hash is required', 'payload_hash');
  }
  if (s.proposal.payload_hash !== null && s.proposal.payload_hash !== d.payload_hash) {
    throw new AcpError('CONFLICT', `payload_hash ${d.payload_hash} is not the proposal's (${s.proposal.payload_hash})`, 'payload_hash');
  }
  checkRouting(d.routing);
  return emit(command, d.proposal_id, [
    {
      type: PROPOSAL_EVENT_TYPES.EscalationRouted,
      data: { proposal_id: d.proposal_id, escalation_id: s.desk.escalationId, payload_hash: d.payload_hash, routing: d.routing },
    },
  ]);
}

/**
 * The ladder: every step due at `now` (each `after_ms` after the previous one, the first after the
 * escalation), in order. A reminder and a reassignment are events and notifications; the default
 * step ends the escalation with its outcome (trigger timeout) or expiry. Nothing due: no events.
 */
export function decideAdvanceEscalationLadder(command: AdvanceEscalationLadder, state: ProposalState, _config: DeciderConfig): ProposalEvent[] {
  checkMetadata(command);
  const d = command.data;
  const s = requireEscalated(state, d.proposal_id, d.escalation_id);
  const routing = s.desk.routing;
  if (routing === null) return [];
  const escalatedAt = s.escalation.escalated_at;
  const base = { proposal_id: d.proposal_id, escalation_id: s.desk.escalationId };
  let assignees = [...s.desk.assignees];
  const drafts: Draft[] = dueLadderSteps(escalatedAt, routing.ladder, s.desk.nextStep, command.now).map((index): Draft => {
    const step = routing.ladder[index];
    const due_at = ladderStepDueAt(escalatedAt, routing.ladder, index)!;
    switch (step.action) {
      case 'remind':
        return { type: PROPOSAL_EVENT_TYPES.EscalationReminded, data: { ...base, step: index, due_at, assignees } };
      case 'reassign': {
        const from = assignees;
        assignees = [...step.to];
        return { type: PROPOSAL_EVENT_TYPES.EscalationReassigned, data: { ...base, step: index, due_at, from, to: assignees } };
      }
      case 'default': {
        const votes = { votes_for: s.resolution.votes_for, votes_against: s.resolution.votes_against };
        const note = `no human resolution within the escalation ladder; default outcome ${step.outcome}`;
        return {
          type: PROPOSAL_EVENT_TYPES.EscalationDefaulted,
          data: {
            ...base,
            step: index,
            resolution: resolution(step.outcome, 'timeout', votes, command.now, { note, escalation: s.escalation, ladder_default: true }),
          },
        };
      }
      default: {
        const _exhaustive: never = step;
        throw new AcpError('INTERNAL', `unknown ladder step ${JSON.stringify(_exhaustive)}`);
      }
    }
  });
  return emit(command, d.proposal_id, drafts);
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
    { type: PROPOSAL_EVENT_TYPES.ChildOutcomeRecorded, data: { proposal_id: d.proposal_id, child_proposal_id: d.child_proposal_id, outcome: d.outcome } },
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
