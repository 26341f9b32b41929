import {
  AcpError,
  AdvanceEscalationLadder,
  decide,
  evolveProposal,
  initialProposalState,
  ProposalCommand,
  ProposalEvent,
  ProposalState,
  RouteEscalation,
} from '@conclave/acp-protocol';
import type { Identity, ProposalReadPolicy, ProposalStore } from '@conclave/service-kit';
import { applyToInbox, emptyInbox, type EscalationInbox, inboxEntryOf } from './escalation-inbox';
import { EscalationQueries } from './escalation-queries';

// Deterministic ids and times (ULIDs whose random parts are far apart, so derived event ids never collide).
const B32 = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const b32 = (n: bigint, len: number) => Array.from({ length: len }, (_, i) => B32[Number((n >> BigInt(5 * (len - 1 - i))) & 31n)]).join('');
const ulidOf = (n: number) => b32(0x01946f8a2c00n, 10) + b32(BigInt(n) << 32n, 16);
const P1 = ulidOf(1);
const at = (s: number) => new Date(Date.UTC(2025, 0, 15, 10, 0, 0) + s * 1000).toISOString().replace('.000Z', 'Z');
let next = 100;
const meta = (actor: string, now = at(0)) => ({ command_id: ulidOf(next++), now, actor });
type Factors = { domain_authority: number; confidence: number; trust_score: number };
const submit = (data: { domain?: string } = {}): ProposalCommand => ({
  type: 'SubmitProposal',
  ...meta('agent'),
  data: {
    proposal_id: P1,
    type: 'proposal',
    domain: data.domain ?? 'risk.credit',
    author: 'agent',
    payload: { x: 1 },
    quorum: 2,
    created_at: at(0),
    expires_at: null,
  },
});
const vote = (p: string, response_type: 'endorse' | 'challenge', f: Factors): ProposalCommand => ({
  type: 'RecordResponse',
  ...meta(p),
  data: { proposal_id: P1, participant_id: p, response_type, ...f, reason: null },
});
const endorse = (p: string, f: Factors) => vote(p, 'endorse', f);
const challenge = (p: string, f: Factors) => vote(p, 'challenge', f);
const resolveByQuorum = (): ProposalCommand => ({ type: 'ResolveProposal', ...meta('resolver'), data: { proposal_id: P1 } });
const escalate = (reason: string): ProposalCommand => ({
  type: 'EscalateProposal',
  ...meta('agent-2'),
  data: { proposal_id: P1, reason, requested_by: 'agent-2' },
});
const resolveEscalation = (outcome: 'approved' | 'rejected', o: { resolved_by: string }): ProposalCommand => ({
  type: 'ResolveEscalation',
  ...meta(o.resolved_by),
  data: { proposal_id: P1, outcome, resolved_by: o.resolved_by, note: 'n' },
});
function history(commands: ProposalCommand[]): ProposalEvent[] {
  const events: ProposalEvent[] = [];
  let state: ProposalState = initialProposalState;
  for (const c of commands) {
    for (const e of decide(c, state)) {
      events.push(e);
      state = evolveProposal(state, e);
    }
  }
  return events;
}

const F = { domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 };

function fold(events: ProposalEvent[]) {
  const inbox = emptyInbox();
  for (const e of events) applyToInbox(inbox, e);
  return inbox;
}

describe('the escalation inbox is a projection of the proposal streams', () => {
  const base = [submit({ domain: 'strategy.pricing' }), endorse('a', F), challenge('b', F), resolveByQuorum()];
  const tie = history(base);
  const escalationId = tie[tie.length - 1].event_id;
  const route: RouteEscalation = {
    type: 'RouteEscalation',
    command_id: ulidOf(700),
    now: at(1),
    actor: 'desk',
    data: {
      proposal_id: P1,
      escalation_id: escalationId,
      payload_hash: 'h',
      routing: {
        route_id: 'r',
        assignees: ['lead'],
        ladder: [
          { action: 'reassign', after_ms: 60_000, to: ['vp'] },
          { action: 'default', after_ms: 60_000, outcome: 'expired' },
        ],
        sign_off: null,
      },
    },
  };
  const advance: AdvanceEscalationLadder = {
    type: 'AdvanceEscalationLadder',
    command_id: ulidOf(800),
    now: at(61),
    actor: 'desk',
    data: { proposal_id: P1 },
  };

  it('given a tie, then an open entry with the 10.3 metadata; given routing, then assignees and the next ladder step', () => {
    expect(fold(tie).entries.get(P1)).toMatchObject({
      status: 'open',
      domain: 'strategy.pricing',
      escalation_id: escalationId,
      // 10.3: why, when, and who asked for it (the resolver that found the tie)
      escalation: { reason: 'tie', escalated_at: at(0), requested_by: 'resolver' },
      routed: false,
      votes_for: 0.648,
    });
    const routed = history([...base, route]);
    expect(fold(routed).entries.get(P1)).toMatchObject({
      routed: true,
      assignees: ['lead'],
      next_step: 0,
      next_step_due_at: '2025-01-15T10:01:00.000Z',
      payload_hash: 'h',
    });
  });

  it('given a reassignment step, then the fallback assignee and the next due step; given the default, then closed', () => {
    const events = history([...base, route, advance]);
    expect(fold(events).entries.get(P1)).toMatchObject({
      status: 'open',
      assignees: ['vp'],
      next_step: 1,
      next_step_due_at: '2025-01-15T10:02:00.000Z',
    });
    const done = history([...base, route, { ...advance, command_id: ulidOf(900), now: at(600) }]);
    expect(fold(done).entries.get(P1)).toMatchObject({
      status: 'expired',
      next_step_due_at: null,
      resolution: { outcome: 'expired', trigger: 'timeout' },
    });
  });

  it('given a human resolution, then resolved with who; a pending proposal never appears', () => {
    const events = history([submit(), escalate('why'), resolveEscalation('rejected', { resolved_by: 'human:bob' })]);
    expect(fold(events).entries.get(P1)).toMatchObject({
      status: 'resolved',
      escalation: { reason: 'manual' },
      resolution: { outcome: 'rejected', resolved_by: 'human:bob' },
    });
    expect(fold(history([submit()])).entries.size).toBe(0);
  });

  it('a replay of the recorded log (as stored JSON) rebuilds the same inbox', () => {
    const events = history([...base, route, advance]);
    expect(fold(JSON.parse(JSON.stringify(events)))).toEqual(fold(events));
  });
});

/**
 * `get` answers for the log as it stands. A second replica's inbox (a reactor) may not have read
 * an escalation yet, or its resolution: the human who follows a link to it is shown it all the same.
 */
describe('EscalationQueries.get: the escalation as the log has it, however far the inbox has read', () => {
  const reader = { participant_id: 'human:bob' } as unknown as Identity;
  const policy = { requireDomain: () => undefined, render: async () => ({ responses: [] }) } as unknown as ProposalReadPolicy;
  /** A replica whose log holds `events` and whose inbox has read only the first `read` of them. */
  const replica = (events: ProposalEvent[], read: number) => {
    const store = { read: async () => events } as unknown as ProposalStore;
    const lagging = fold(events.slice(0, read));
    const inbox = { get: (id: string) => lagging.entries.get(id), list: () => [...lagging.entries.values()] } as unknown as EscalationInbox;
    return new EscalationQueries(inbox, store, policy);
  };
  const refusal = (queries: EscalationQueries) =>
    queries.get(P1, reader).then(
      () => undefined,
      (e: unknown) => (e instanceof AcpError ? e.code : e),
    );

  it('given an escalation its inbox has not read yet, when a human gets it, then it is shown open, bound to its escalation event', async () => {
    const events = history([submit(), escalate('why')]);
    const detail = await replica(events, 1).get(P1, reader);
    expect(detail.escalation).toMatchObject({ status: 'open', escalation_id: events[1].event_id, escalation: { reason: 'manual' } });
    expect(detail.binding.escalation_id).toBe(events[1].event_id);
  });

  it('given a resolution its inbox has not read yet, when a human gets it, then it is shown resolved, as a replica that has read it shows it', async () => {
    const events = history([submit(), escalate('why'), resolveEscalation('rejected', { resolved_by: 'human:bob' })]);
    const lagging = await replica(events, 2).get(P1, reader);
    const current = await replica(events, events.length).get(P1, reader);
    expect(lagging.escalation).toMatchObject({ status: 'resolved', resolution: { outcome: 'rejected', resolved_by: 'human:bob' } });
    expect(lagging).toEqual(current);
    expect(inboxEntryOf(events)).toEqual(fold(events).entries.get(P1));
  });

  it('given a proposal never escalated, when a human gets it, then NOT_ESCALATED; given no proposal, then PROPOSAL_NOT_FOUND', async () => {
    expect(await refusal(replica(history([submit()]), 1))).toBe('NOT_ESCALATED');
    expect(await refusal(replica([], 0))).toBe('PROPOSAL_NOT_FOUND');
  });
});
