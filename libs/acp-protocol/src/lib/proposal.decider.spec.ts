/**
 * The proposal decider, given/when/then, by spec section (4 lifecycle, 5 responses, 14.4 ids,
 * DESIGN 3 event envelopes and derived ids).
 */
import {
  P1,
  P2,
  T0,
  at,
  challenge,
  endorse,
  escalate,
  expire,
  min,
  nextCommandId,
  recordChild,
  resolveByQuorum,
  resolveEscalation,
  submit,
} from '../testing/fixtures';
import { given, history } from '../testing/given-when-then';
import { PROPOSAL_EVENT_TYPES } from './contracts';
import { AcpError } from './errors';
import { deriveEventId } from './ids';
import { DEFAULT_DECIDER_CONFIG, decide } from './proposal.decider';
import type { EscalationRouting } from './escalation-ladder';
import type { AdvanceEscalationLadder, ProposalCommand, RouteEscalation } from './proposal.commands';
import { acceptsResponses, pendingResolution, projectProposal } from './proposal.projection';
import { evolveProposal, foldProposal, initialProposalState } from './proposal.state';

const HIGH = { domain_authority: 0.9, confidence: 0.9, trust_score: 0.9 };
const LOW = { domain_authority: 0.5, confidence: 0.5, trust_score: 0.5 };

function routeEscalation(escalation_id: string, ladder: EscalationRouting['ladder']): RouteEscalation {
  return {
    type: 'RouteEscalation',
    command_id: nextCommandId(),
    now: T0,
    actor: 'conclave-escalation',
    data: {
      proposal_id: P1,
      escalation_id,
      payload_hash: 'sha256:abc',
      routing: { route_id: 'r', assignees: ['human:lead'], ladder, sign_off: null },
    },
  };
}
function advanceLadder(now: string): AdvanceEscalationLadder {
  return { type: 'AdvanceEscalationLadder', command_id: nextCommandId(), now, actor: 'conclave-escalation', data: { proposal_id: P1 } };
}

describe('4.1 / 4.3 submitting a proposal', () => {
  it('4.3 a proposal with the required fields enters PENDING (4.1) with ProposalSubmitted', () => {
    const { state } = given([])
      .when(submit())
      .then([{ type: 'ProposalSubmitted', data: { proposal_id: P1, domain: 'risk.credit', quorum: 2, author: 'agent-risk-001' } }]);
    expect(state.status).toBe('pending');
    expect(projectProposal(state)).toMatchObject({ status: 'pending', responses: [], resolution: null });
  });

  it('14.4 a duplicate proposal_id is rejected with DUPLICATE_PROPOSAL_ID', () => {
    given([submit()])
      .when(submit({ quorum: 3 }))
      .thenThrows('DUPLICATE_PROPOSAL_ID', 'proposal_id');
  });

  it('14.4 given a recorded proposal, when the identical proposal is retried, then nothing happens (idempotent)', () => {
    given([submit()]).when(submit()).thenNothingHappened();
  });

  it('11.3 given caused_by, then it is recorded and shown on the proposal; a malformed, repeated or self cause is refused', () => {
    const { state } = given([])
      .when(submit({ caused_by: [P2] }))
      .then([{ type: 'ProposalSubmitted', data: { caused_by: [P2] } }]);
    expect(projectProposal(state).caused_by).toEqual([P2]);
    given([])
      .when(submit({ caused_by: ['nope'] }))
      .thenThrows('INVALID_ID', 'caused_by.0');
    given([])
      .when(submit({ caused_by: [P2, P2] }))
      .thenThrows('SCHEMA_VIOLATION', 'caused_by');
    given([])
      .when(submit({ caused_by: [P1] }))
      .thenThrows('SCHEMA_VIOLATION', 'caused_by');
  });

  it('12.1 a proposal_id that is not a ULID is INVALID_ID', () => {
    given([])
      .when(submit({ proposal_id: 'not-a-ulid' }))
      .thenThrows('INVALID_ID', 'proposal_id');
  });

  it('7.1 quorum must be an integer >= 1', () => {
    given([])
      .when(submit({ quorum: 0 }))
      .thenThrows('SCHEMA_VIOLATION', 'quorum');
    given([])
      .when(submit({ quorum: 1.5 }))
      .thenThrows('SCHEMA_VIOLATION', 'quorum');
  });

  it('8 expires_at must be a UTC timestamp later than created_at', () => {
    given([])
      .when(submit({ expires_at: T0 }))
      .thenThrows('SCHEMA_VIOLATION', 'expires_at');
    given([])
      .when(submit({ expires_at: '2025-01-15T10:05:00+02:00' }))
      .thenThrows('SCHEMA_VIOLATION', 'expires_at');
  });

  it('the command metadata is checked: command_id is a ULID, now a UTC timestamp, actor present', () => {
    given([])
      .when({ ...submit(), command_id: 'x' })
      .thenThrows('INVALID_ID', 'command_id');
    given([])
      .when({ ...submit(), now: 'yesterday' })
      .thenThrows('SCHEMA_VIOLATION', 'now');
    given([])
      .when({ ...submit(), actor: '' })
      .thenThrows('SCHEMA_VIOLATION', 'actor');
  });

  it('an unknown command type is a typed error, not a crash', () => {
    expect(() => decide({ ...submit(), type: 'Nope' } as unknown as ProposalCommand, initialProposalState)).toThrow(AcpError);
  });
});

describe('DESIGN 3: event envelopes', () => {
  it('every event carries event_id, type, schema_version 1, occurred_at = now, actor, causation_id = command_id, correlation_id = proposal_id', () => {
    const cmd = submit({}, { now: at(3), actor: 'agent-risk-001' });
    const [e] = decide(cmd, initialProposalState);
    expect(e).toMatchObject({
      event_id: deriveEventId(cmd.command_id, 1),
      type: 'ProposalSubmitted',
      schema_version: 1,
      occurred_at: at(3),
      actor: 'agent-risk-001',
      causation_id: cmd.command_id,
      correlation_id: P1,
    });
  });

  it('an explicit correlation_id is carried onto the events', () => {
    const [e] = decide(submit({}, { correlation_id: 'trace-42' }), initialProposalState);
    expect(e.correlation_id).toBe('trace-42');
  });

  it('a redelivered command yields byte-identical events (ids derived from the command id)', () => {
    const cmd = submit({ type: 'observation' });
    expect(JSON.stringify(decide(cmd, initialProposalState))).toBe(JSON.stringify(decide(cmd, initialProposalState)));
    const events = decide(cmd, initialProposalState);
    expect(events.map((e) => e.event_id)).toEqual([deriveEventId(cmd.command_id, 1), deriveEventId(cmd.command_id, 2)]);
    expect(new Set(events.map((e) => e.event_id)).size).toBe(2);
  });

  it('event type strings are the contracts constants', () => {
    const types = history([submit(), endorse('a', HIGH), challenge('b', LOW), resolveByQuorum()]).map((e) => e.type);
    expect(types).toEqual([
      PROPOSAL_EVENT_TYPES.ProposalSubmitted,
      PROPOSAL_EVENT_TYPES.ResponseRecorded,
      PROPOSAL_EVENT_TYPES.ResponseRecorded,
      PROPOSAL_EVENT_TYPES.ProposalResolved,
    ]);
  });
});

describe('5 response semantics', () => {
  it('5.1/6.1 a response is recorded with the weight the service computes from its factors', () => {
    given([submit()])
      .when(
        endorse(
          'agent-credit-002',
          { confidence: 0.92, domain_authority: 0.95, trust_score: 0.88 },
          { timestamp: at(90), now: at(90), reason: 'DTI 28%' },
        ),
      )
      .then([
        {
          type: 'ResponseRecorded',
          data: {
            response: {
              schema_version: '1.0',
              participant_id: 'agent-credit-002',
              response_type: 'endorse',
              weight: 0.76912,
              reason: 'DTI 28%',
              timestamp: at(90),
            },
          },
        },
      ]);
  });

  it('5.2 the response timestamp defaults to the command now', () => {
    const [e] = given([submit()])
      .when(endorse('a', HIGH, { now: at(42) }))
      .events();
    expect(e).toMatchObject({ data: { response: { timestamp: at(42) } } });
  });

  it('5.3 one response per participant: a second response is DUPLICATE_RESPONSE and the first stands (15.3)', () => {
    given([submit({ quorum: 3 }), endorse('agent-a', HIGH)])
      .when(challenge('agent-a', HIGH))
      .thenThrows('DUPLICATE_RESPONSE', 'participant_id');
  });

  it('5.3 no self-response: the author is refused with SELF_RESPONSE', () => {
    given([submit()]).when(endorse('agent-risk-001', HIGH)).thenThrows('SELF_RESPONSE', 'participant_id');
  });

  it('5.3 PENDING-only: a response to a resolved proposal is PROPOSAL_NOT_PENDING', () => {
    given([submit({ quorum: 1 }), endorse('a', HIGH), resolveByQuorum()])
      .when(endorse('b', HIGH))
      .thenThrows('PROPOSAL_NOT_PENDING');
  });

  it('a response dated further ahead of now than the configured skew is SCHEMA_VIOLATION on timestamp; one within it is recorded as sent', () => {
    const history0 = [submit({ quorum: 3 })];
    const ahead = { ...endorse('a', HIGH, { now: at(60) }) };
    ahead.data = { ...ahead.data, timestamp: at(60 + 31) };
    given(history0).when(ahead).thenThrows('SCHEMA_VIOLATION', 'timestamp');
    const within = { ...endorse('a', HIGH, { now: at(60) }) };
    within.data = { ...within.data, timestamp: at(60 + 29) };
    const [e] = decide(within, foldProposal(history(history0)));
    expect((e.data as { response: { timestamp: string } }).response.timestamp).toBe(at(89));
  });

  it('8.1 a response received at or after expires_at is refused before the sweeper records the expiry, and a late challenge cannot change the outcome', () => {
    const inTime = [submit({ quorum: 3 }), endorse('a', HIGH)];
    given(inTime)
      .when(challenge('b', HIGH, { now: min(5) }))
      .thenThrows('PROPOSAL_NOT_PENDING', 'expires_at');
    given(inTime)
      .when(challenge('b', HIGH, { now: at(5 * 60 + 30) }))
      .thenThrows('PROPOSAL_NOT_PENDING', 'expires_at');
    // The grace delays the sweeper only: it never reopens the proposal to responses.
    expect(() =>
      decide(challenge('b', HIGH, { now: at(5 * 60 + 1) }), foldProposal(history(inTime)), {
        ...DEFAULT_DECIDER_CONFIG,
        expiryGraceMs: 60_000,
      }),
    ).toThrow(AcpError);
    const [expired] = decide(expire(at(5 * 60 + 30)), foldProposal(history(inTime)));
    expect(expired.type).toBe(PROPOSAL_EVENT_TYPES.ProposalResolved);
    expect((expired.data as { resolution: { outcome: string } }).resolution.outcome).toBe('approved');
  });

  it('5.3 / 4.1 PENDING-only: responses to escalated and expired proposals are refused', () => {
    given([submit(), escalate()]).when(endorse('b', HIGH)).thenThrows('PROPOSAL_NOT_PENDING');
    given([submit(), expire(min(5))])
      .when(endorse('b', HIGH))
      .thenThrows('PROPOSAL_NOT_PENDING');
  });

  it('a response to a proposal that does not exist is PROPOSAL_NOT_FOUND', () => {
    given([]).when(endorse('b', HIGH)).thenThrows('PROPOSAL_NOT_FOUND', 'proposal_id');
  });

  it('DESIGN 3: once the quorum policy is met, no more responses, even before ProposalResolved exists', () => {
    const g = given([submit({ quorum: 2 }), endorse('a', HIGH), challenge('b', LOW)]);
    expect(acceptsResponses(g.state)).toBe(false);
    expect(pendingResolution(g.state)).toEqual({ proposal_id: P1 });
    g.when(endorse('c', HIGH)).thenThrows('PROPOSAL_NOT_PENDING', 'proposal_id', /quorum/);
  });

  it('6.1 factors outside [0, 1] (possible from a registry) are clamped and recorded clamped', () => {
    const [e] = given([submit()])
      .when(endorse('a', { domain_authority: 1.7, confidence: -0.2, trust_score: NaN }))
      .events();
    expect(e).toMatchObject({ data: { response: { domain_authority: 1, confidence: 0, trust_score: 0, weight: 0 } } });
  });
});

describe('3 / 6.3 resolving by quorum (the resolver appends ResolveProposal)', () => {
  it('6.3 votes_for > votes_against: approved, trigger quorum', () => {
    given([submit(), endorse('a', HIGH), challenge('b', LOW)])
      .when(resolveByQuorum())
      .then([
        {
          type: 'ProposalResolved',
          data: { resolution: { outcome: 'approved', trigger: 'quorum', votes_for: 0.729, votes_against: 0.125 } },
        },
      ]);
  });

  it('6.3 votes_against > votes_for: rejected', () => {
    given([submit(), endorse('a', LOW), challenge('b', HIGH)])
      .when(resolveByQuorum())
      .then([{ type: 'ProposalResolved', data: { resolution: { outcome: 'rejected' } } }]);
  });

  it('6.3 / 10.1 a tie (including 0 = 0) escalates with reason tie and trigger quorum', () => {
    const zero = { domain_authority: 0, confidence: 0.9, trust_score: 0.9 };
    given([submit(), endorse('a', zero), challenge('b', zero)], DEFAULT_DECIDER_CONFIG)
      .when(resolveByQuorum({ actor: 'resolver-1' }))
      .then([
        {
          type: 'ProposalEscalated',
          data: {
            resolution: { outcome: 'escalated', trigger: 'quorum', votes_for: 0, votes_against: 0 },
            escalation: { reason: 'tie', requested_by: 'resolver-1' },
          },
        },
      ]);
  });

  it('15.4 at most one resolution: resolving twice is PROPOSAL_NOT_PENDING', () => {
    given([submit({ quorum: 1 }), endorse('a', HIGH), resolveByQuorum()])
      .when(resolveByQuorum())
      .thenThrows('PROPOSAL_NOT_PENDING');
  });

  it('a resolve before the quorum policy is met is a CONFLICT (stale view), nothing is appended', () => {
    given([submit({ quorum: 2 }), endorse('a', HIGH)])
      .when(resolveByQuorum())
      .thenThrows('CONFLICT', 'proposal_id', /quorum/);
  });
});

describe('4.1 terminal states', () => {
  it('given RESOLVED, EXPIRED or ESCALATED, when resolved by quorum, expired, escalated or responded to, then PROPOSAL_NOT_PENDING; a human resolution only when ESCALATED, and once', () => {
    const resolved = [submit({ quorum: 1 }), endorse('a', HIGH), resolveByQuorum()];
    const expired = [submit(), expire(min(5))];
    // Escalated at T0; at min 10 its expires_at (min 5) has passed, so only the status refuses the sweeper.
    const escalated = [submit(), escalate()];
    for (const h of [resolved, expired, escalated]) {
      given(h).when(resolveByQuorum()).thenThrows('PROPOSAL_NOT_PENDING', 'proposal_id');
      given(h)
        .when(expire(min(10)))
        .thenThrows('PROPOSAL_NOT_PENDING', 'proposal_id');
      given(h).when(escalate('again')).thenThrows('PROPOSAL_NOT_PENDING', 'proposal_id');
      given(h).when(endorse('b', HIGH)).thenThrows('PROPOSAL_NOT_PENDING', 'proposal_id');
    }
    for (const h of [resolved, expired]) {
      given(h).when(resolveEscalation('approved')).thenThrows('NOT_ESCALATED');
    }
    given(escalated)
      .when(resolveEscalation('rejected'))
      .then([{ type: 'EscalationResolved', data: { resolution: { outcome: 'rejected', trigger: 'manual', resolved_by: 'human:alice' } } }]);
    given([...escalated, resolveEscalation('rejected')])
      .when(resolveEscalation('approved'))
      .thenThrows('NOT_ESCALATED');
  });

  it('given ESCALATED with no route, when the ladder timer fires, then nothing happens: only a human resolves it', () => {
    const events = history([submit(), escalate()]);
    given(events)
      .when(advanceLadder(min(60)))
      .thenNothingHappened();
  });

  it('given ESCALATED routed with a ladder ending in a default, when the default step is due, then it leaves ESCALATED without a human: trigger timeout, ladder_default', () => {
    const events = history([submit(), escalate()]);
    const escalationId = events[1].event_id;
    const routed = [
      ...events,
      ...given(events)
        .when(routeEscalation(escalationId, [{ action: 'default', after_ms: 60_000, outcome: 'rejected' }]))
        .events(),
    ];
    const { state } = given(routed)
      .when(advanceLadder(min(1)))
      .then([
        {
          type: 'EscalationDefaulted',
          actor: 'conclave-escalation',
          data: { escalation_id: escalationId, resolution: { outcome: 'rejected', trigger: 'timeout', ladder_default: true } },
        },
      ]);
    expect(projectProposal(state)).toMatchObject({ status: 'resolved', resolution: { outcome: 'rejected', trigger: 'timeout' } });
    expect(projectProposal(state).resolution).not.toHaveProperty('resolved_by');
  });

  it('commands on a proposal that does not exist are PROPOSAL_NOT_FOUND', () => {
    for (const c of [resolveByQuorum(), expire(min(5)), escalate(), resolveEscalation('approved'), recordChild(P2, 'approved')]) {
      given([]).when(c).thenThrows('PROPOSAL_NOT_FOUND');
    }
  });
});

describe('evolveProposal', () => {
  it('refuses an event that the decider could not have produced (INTERNAL)', () => {
    const [submitted, resolved] = history([submit({ type: 'observation' })]);
    expect(() => evolveProposal(initialProposalState, resolved)).toThrow(AcpError);
    const s = foldProposal([submitted, resolved]);
    expect(() => evolveProposal(s, submitted)).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
  });

  it('folding the same events twice gives equal states', () => {
    const events = history([submit(), endorse('a', HIGH), challenge('b', LOW), resolveByQuorum()]);
    expect(foldProposal(events)).toEqual(foldProposal(events));
  });

  it('nextCommandId and fixtures give distinct command ids', () => {
    expect(nextCommandId()).not.toBe(nextCommandId());
  });
});
