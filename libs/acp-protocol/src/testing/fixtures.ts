/**
 * Deterministic test data: ULIDs from counters (spaced so derived event ids never collide),
 * timestamps from a fixed origin, and command builders. No clock, no randomness.
 */
import type { EntryType, HumanOutcome, ResponseType } from '../lib/contracts';
import type {
  EscalateProposal,
  ExpireProposal,
  RecordChildOutcome,
  RecordResponse,
  ResolveEscalation,
  ResolveProposal,
  SubmitProposal,
} from '../lib/proposal.commands';
import type { ChildOutcome } from '../lib/wire-format';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

function base32(n: bigint, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    out = CROCKFORD[Number(n & 31n)] + out;
    n >>= 5n;
  }
  return out;
}

/** A ULID with time part `time` and random part n * 2^32 (room for 2^32 derived events). */
export function ulidOf(n: number, time = 0x0194_6f8a_2c00): string {
  return base32(BigInt(time), 10) + base32(BigInt(n) << 32n, 16);
}

export const P1 = ulidOf(1, 0x0194_6f8a_2000);
export const P2 = ulidOf(2, 0x0194_6f8a_2000);
export const P3 = ulidOf(3, 0x0194_6f8a_2000);

let commandCounter = 1000;
export function nextCommandId(): string {
  return ulidOf(commandCounter++);
}

/** ISO timestamp `seconds` after 2025-01-15T10:00:00Z (the spec's example day). */
export function at(seconds: number): string {
  return new Date(Date.UTC(2025, 0, 15, 10, 0, 0) + seconds * 1000).toISOString().replace('.000Z', 'Z');
}
export const T0 = at(0);
export const min = (m: number) => at(m * 60);

type Meta = { command_id?: string; now?: string; actor?: string; correlation_id?: string };

function meta(m: Meta, defaultActor: string) {
  return {
    command_id: m.command_id ?? nextCommandId(),
    now: m.now ?? T0,
    actor: m.actor ?? defaultActor,
    ...(m.correlation_id ? { correlation_id: m.correlation_id } : {}),
  };
}

export function submit(data: Partial<SubmitProposal['data']> = {}, m: Meta = {}): SubmitProposal {
  return {
    type: 'SubmitProposal',
    ...meta(m, data.author ?? 'agent-risk-001'),
    data: {
      proposal_id: P1,
      type: 'proposal' as EntryType,
      domain: 'risk.credit',
      author: 'agent-risk-001',
      payload: { action: 'approve_loan', loan_id: 'LOAN-42', amount_usd: 250000 },
      quorum: 2,
      created_at: T0,
      expires_at: min(5),
      ...data,
    },
  };
}

export interface Factors {
  domain_authority: number;
  confidence: number;
  trust_score: number;
}

export function respond(
  participant: string,
  response_type: ResponseType,
  f: Factors,
  m: Meta & { proposal_id?: string; reason?: string | null; timestamp?: string } = {},
): RecordResponse {
  return {
    type: 'RecordResponse',
    ...meta(m, participant),
    data: {
      proposal_id: m.proposal_id ?? P1,
      participant_id: participant,
      response_type,
      ...f,
      reason: m.reason ?? null,
      ...(m.timestamp ? { timestamp: m.timestamp } : {}),
    },
  };
}

export const endorse = (p: string, f: Factors, m: Parameters<typeof respond>[3] = {}) => respond(p, 'endorse', f, m);
export const challenge = (p: string, f: Factors, m: Parameters<typeof respond>[3] = {}) => respond(p, 'challenge', f, m);

export function resolveByQuorum(m: Meta & { proposal_id?: string } = {}): ResolveProposal {
  return { type: 'ResolveProposal', ...meta(m, 'resolver'), data: { proposal_id: m.proposal_id ?? P1 } };
}

export function expire(now: string, m: Meta & { proposal_id?: string } = {}): ExpireProposal {
  return { type: 'ExpireProposal', ...meta({ ...m, now }, 'sweeper'), data: { proposal_id: m.proposal_id ?? P1 } };
}

export function escalate(reason = 'needs a human', m: Meta & { proposal_id?: string; requested_by?: string } = {}): EscalateProposal {
  return {
    type: 'EscalateProposal',
    ...meta(m, m.requested_by ?? 'agent-ops-007'),
    data: { proposal_id: m.proposal_id ?? P1, reason, requested_by: m.requested_by ?? 'agent-ops-007' },
  };
}

export function resolveEscalation(
  outcome: HumanOutcome,
  m: Meta & { proposal_id?: string; resolved_by?: string; note?: string | null } = {},
): ResolveEscalation {
  return {
    type: 'ResolveEscalation',
    ...meta(m, m.resolved_by ?? 'human:alice'),
    data: {
      proposal_id: m.proposal_id ?? P1,
      outcome,
      resolved_by: m.resolved_by ?? 'human:alice',
      note: m.note === undefined ? 'looked at it' : m.note,
    },
  };
}

export function recordChild(child: string, outcome: ChildOutcome, m: Meta & { proposal_id?: string } = {}): RecordChildOutcome {
  return {
    type: 'RecordChildOutcome',
    ...meta(m, 'resolver'),
    data: { proposal_id: m.proposal_id ?? P1, child_proposal_id: child, outcome },
  };
}
