/**
 * The escalation desk's commands (10.2 and the desk's own): a human resolution with M-of-N
 * sign-off, the routing of an open escalation, and the reminder ladder.
 */
import { PROPOSAL_EVENT_TYPES } from './contracts';
import { AcpError } from './errors';
import { dueLadderSteps, ladderStepDueAt } from './escalation-ladder';
import type { EscalationRouting } from './escalation-ladder';
import { signOffDecision } from './human-sign-off';
import type { AdvanceEscalationLadder, ResolveEscalation, RouteEscalation } from './proposal.commands';
import type { ProposalEvent } from './proposal.events';
import type { ProposalState } from './proposal.state';
import { DeciderConfig, Draft, checkMetadata, emit, requireEscalated, resolution } from './proposal.decider-kernel';

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
      throw new AcpError(
        'CONFLICT',
        `payload_hash ${d.payload_hash} is not the hash of proposal ${d.proposal_id}'s payload (${expected})`,
        'payload_hash',
      );
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
    throw new AcpError(
      'FORBIDDEN',
      `${d.resolved_by} is not one of the humans whose sign-off counts for this escalation (${rule.of.join(', ')})`,
      'resolved_by',
    );
  }
  if (s.desk.signOffs.some((x) => x.by === d.resolved_by)) {
    throw new AcpError(
      'DUPLICATE_RESPONSE',
      `${d.resolved_by} has already signed off this escalation; the first sign-off stands`,
      'resolved_by',
    );
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
export function decideAdvanceEscalationLadder(
  command: AdvanceEscalationLadder,
  state: ProposalState,
  _config: DeciderConfig,
): ProposalEvent[] {
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
