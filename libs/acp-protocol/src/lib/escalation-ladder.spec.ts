/** Issue 5: the escalation desk's routing and ladder, decided from the log (given/when/then). */
import { P1, at, challenge, endorse, escalate, resolveByQuorum, resolveEscalation, submit, ulidOf } from '../testing/fixtures';
import { given, history } from '../testing/given-when-then';
import { AcpError } from './errors';
import {
  EscalationRoute,
  EscalationRouting,
  dueLadderSteps,
  ladderStepDueAt,
  parseEscalationRoutes,
  routeFor,
  routingFor,
} from './escalation-ladder';
import type { AdvanceEscalationLadder, ProposalCommand, RouteEscalation } from './proposal.commands';
import { projectProposal, statusAfter } from './proposal.projection';
import { foldProposal } from './proposal.state';
import { toDecisionEvent } from './decision-events';
import type { ProposalEvent } from './proposal.events';

const F = { domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 };
const HASH = 'sha256:abc';
let n = 5000;
const cid = () => ulidOf(n++);

const LADDER: EscalationRouting = {
  route_id: 'pricing',
  assignees: ['human:lead'],
  ladder: [
    { action: 'remind', after_ms: 60_000 },
    { action: 'reassign', after_ms: 60_000, to: ['human:vp'] },
    { action: 'default', after_ms: 120_000, outcome: 'rejected' },
  ],
  sign_off: null,
};

function route(escalationId: string, routing: EscalationRouting = LADDER, payload_hash = HASH, now = at(1)): RouteEscalation {
  return {
    type: 'RouteEscalation',
    command_id: cid(),
    now,
    actor: 'conclave-escalation',
    data: { proposal_id: P1, escalation_id: escalationId, payload_hash, routing },
  };
}
function advance(now: string, escalation_id?: string): AdvanceEscalationLadder {
  return {
    type: 'AdvanceEscalationLadder',
    command_id: cid(),
    now,
    actor: 'conclave-escalation',
    data: { proposal_id: P1, ...(escalation_id ? { escalation_id } : {}) },
  };
}

/** A tie at quorum, escalated at at(0) (C.4). */
const tie: ProposalCommand[] = [submit({ domain: 'strategy.pricing' }), endorse('a', F), challenge('b', F), resolveByQuorum()];
function escalatedHistory(): { events: ProposalEvent[]; escalationId: string } {
  const events = history(tie);
  return { events, escalationId: events[events.length - 1].event_id };
}

describe('routing: who is responsible (10.3), per domain', () => {
  const routes = parseEscalationRoutes([
    { id: 'all', assignees: ['team-ops'] },
    { id: 'risk', domain_prefix: 'risk', assignees: ['human:risk-lead'] },
    { id: 'credit', domain_prefix: 'risk.credit', assignees: ['human:credit'], ladder: [{ action: 'remind', after_ms: 1000 }] },
  ]);

  it('given routes, when a domain is routed, then the longest matching prefix wins', () => {
    expect(routeFor(routes, 'risk.credit.retail')?.id).toBe('credit');
    expect(routeFor(routes, 'risk.market')?.id).toBe('risk');
    expect(routeFor(routes, 'riskx')?.id).toBe('all');
    expect(routeFor([], 'risk')).toBeUndefined();
  });

  it("given a policy that names an assignee, then it comes first, then the route's", () => {
    expect(routingFor(routes, { domain: 'risk.credit' }, { assigned_to: 'team-sre' })).toEqual({
      route_id: 'credit',
      assignees: ['team-sre', 'human:credit'],
      ladder: [{ action: 'remind', after_ms: 1000 }],
      sign_off: null,
    });
    expect(routingFor([], { domain: 'x' }, {})).toEqual({ route_id: null, assignees: [], ladder: [], sign_off: null });
  });

  it('given an escalated proposal, when the desk routes it, then EscalationRouted binds escalation id and payload hash', () => {
    const { events, escalationId } = escalatedHistory();
    const { state } = given(events)
      .when(route(escalationId))
      .then([{ type: 'EscalationRouted', data: { proposal_id: P1, escalation_id: escalationId, payload_hash: HASH, routing: LADDER } }]);
    expect(state).toMatchObject({ status: 'escalated', desk: { escalationId, payloadHash: HASH, assignees: ['human:lead'], nextStep: 0 } });
  });

  it('given an already routed escalation, when routed again, then nothing happens (idempotent)', () => {
    const { events, escalationId } = escalatedHistory();
    given([...events, ...given(events).when(route(escalationId)).events()])
      .when(route(escalationId))
      .thenNothingHappened();
  });

  it('given a pending proposal or a stale escalation id, when routed, then NOT_ESCALATED', () => {
    given([submit()])
      .when(route(ulidOf(1)))
      .thenThrows('NOT_ESCALATED', 'proposal_id');
    given(escalatedHistory().events)
      .when(route(ulidOf(2)))
      .thenThrows('NOT_ESCALATED', 'escalation_id');
  });

  it('given a proposal stamped with a payload hash, when routed with another, then CONFLICT', () => {
    const events = history([submit({ payload_hash: 'sha256:real' }), escalate()]);
    given(events)
      .when(route(events[1].event_id, LADDER, 'sha256:other'))
      .thenThrows('CONFLICT', 'payload_hash');
  });
});

describe('the escalation ladder: reminder, fallback assignee, default outcome', () => {
  const routed = () => {
    const { events, escalationId } = escalatedHistory();
    return { events: [...events, ...given(events).when(route(escalationId)).events()], escalationId };
  };

  it('steps fall due one after another, each after_ms after the previous', () => {
    expect(ladderStepDueAt(at(0), LADDER.ladder, 0)).toBe('2025-01-15T10:01:00.000Z');
    expect(ladderStepDueAt(at(0), LADDER.ladder, 2)).toBe('2025-01-15T10:04:00.000Z');
    expect(ladderStepDueAt(at(0), LADDER.ladder, 3)).toBeNull();
    expect(dueLadderSteps(at(0), LADDER.ladder, 0, at(59))).toEqual([]);
    expect(dueLadderSteps(at(0), LADDER.ladder, 0, at(130))).toEqual([0, 1]);
  });

  it('given a routed escalation, when nothing is due yet, then nothing happens', () => {
    given(routed().events)
      .when(advance(at(59)))
      .thenNothingHappened();
  });

  it('given a routed escalation, when the first step is due, then the assignees are reminded', () => {
    const { events, escalationId } = routed();
    const { state } = given(events)
      .when(advance(at(60)))
      .then([
        {
          type: 'EscalationReminded',
          data: { escalation_id: escalationId, step: 0, due_at: '2025-01-15T10:01:00.000Z', assignees: ['human:lead'] },
        },
      ]);
    expect(state).toMatchObject({ status: 'escalated', desk: { nextStep: 1 } });
  });

  it('given a reminder sent, when the second step is due, then the fallback assignee takes over', () => {
    const { events } = routed();
    const after1 = [
      ...events,
      ...given(events)
        .when(advance(at(60)))
        .events(),
    ];
    const { state } = given(after1)
      .when(advance(at(125)))
      .then([{ type: 'EscalationReassigned', data: { step: 1, from: ['human:lead'], to: ['human:vp'] } }]);
    expect(state).toMatchObject({ desk: { assignees: ['human:vp'], nextStep: 2 } });
  });

  it('given no human answered, when the last step is due, then the default outcome applies with trigger timeout and a decision event', () => {
    const { events } = routed();
    const { events: produced, state } = given(events)
      .when(advance(at(240)))
      .then([
        { type: 'EscalationReminded', data: { step: 0 } },
        { type: 'EscalationReassigned', data: { step: 1 } },
        {
          type: 'EscalationDefaulted',
          data: {
            step: 2,
            resolution: {
              outcome: 'rejected',
              trigger: 'timeout',
              votes_for: 0.648,
              votes_against: 0.648,
              ladder_default: true,
              escalation: { reason: 'tie' },
            },
          },
        },
      ]);
    expect(projectProposal(state)).toMatchObject({ status: 'resolved', resolution: { outcome: 'rejected', trigger: 'timeout' } });
    expect(toDecisionEvent(produced[2], state)).toMatchObject({ outcome: 'rejected', trigger: 'timeout', ladder_default: true });
    expect(statusAfter(produced[2], 'escalated')).toBe('resolved');
    given([...events, ...produced])
      .when(resolveEscalation('approved'))
      .thenThrows('NOT_ESCALATED');
  });

  it('given a ladder that ends in expiry, when it is due, then the proposal is expired by timeout, flagged ladder_default, with a decision event', () => {
    const { events, escalationId } = escalatedHistory();
    const expiring = { ...LADDER, ladder: [{ action: 'default' as const, after_ms: 1000, outcome: 'expired' as const }] };
    const all = [...events, ...given(events).when(route(escalationId, expiring)).events()];
    const { events: produced, state } = given(all)
      .when(advance(at(1)))
      .then([
        {
          type: 'EscalationDefaulted',
          data: {
            escalation_id: escalationId,
            step: 0,
            resolution: { outcome: 'expired', trigger: 'timeout', decided_at: at(1), ladder_default: true, escalation: { reason: 'tie' } },
          },
        },
      ]);
    expect(state.status).toBe('expired');
    expect(projectProposal(state)).toMatchObject({
      status: 'expired',
      resolution: { outcome: 'expired', trigger: 'timeout', ladder_default: true },
    });
    expect(statusAfter(produced[0], 'escalated')).toBe('expired');
    expect(toDecisionEvent(produced[0], state)).toMatchObject({
      proposal_id: P1,
      event_id: produced[0].event_id,
      outcome: 'expired',
      trigger: 'timeout',
      ladder_default: true,
    });
  });

  it('given a ladder that ends in approval, when it is due, then the proposal is approved by timeout, flagged ladder_default, with a decision event', () => {
    const { events, escalationId } = escalatedHistory();
    const approving = { ...LADDER, ladder: [{ action: 'default' as const, after_ms: 1000, outcome: 'approved' as const }] };
    const all = [...events, ...given(events).when(route(escalationId, approving)).events()];
    const { events: produced, state } = given(all)
      .when(advance(at(1)))
      .then([{ type: 'EscalationDefaulted', data: { resolution: { outcome: 'approved', trigger: 'timeout', ladder_default: true } } }]);
    expect(projectProposal(state)).toMatchObject({ status: 'resolved', resolution: { outcome: 'approved', trigger: 'timeout' } });
    expect(toDecisionEvent(produced[0], state)).toMatchObject({ outcome: 'approved', trigger: 'timeout', ladder_default: true });
    expect(statusAfter(produced[0], 'escalated')).toBe('resolved');
  });

  it('given a human resolved first, when the ladder fires, then NOT_ESCALATED and nothing changes', () => {
    const { events } = routed();
    const resolved = [...events, ...given(events).when(resolveEscalation('approved')).events()];
    given(resolved)
      .when(advance(at(300)))
      .thenThrows('NOT_ESCALATED');
  });

  it('a replay of the routed and laddered log folds to the same state', () => {
    const { events } = routed();
    const all = [
      ...events,
      ...given(events)
        .when(advance(at(130)))
        .events(),
    ];
    expect(foldProposal(all)).toEqual(foldProposal(JSON.parse(JSON.stringify(all))));
  });
});

describe('routes configuration is validated at start', () => {
  it('a bad route is refused with SCHEMA_VIOLATION naming the field', () => {
    const bad: [unknown, string][] = [
      [{}, 'escalation_routes'],
      [[{ id: '' }], 'escalation_routes.0.id'],
      [[{ id: 'a' }, { id: 'a' }], 'escalation_routes.1.id'],
      [[{ id: 'a', domain_prefix: 'risk.*' }], 'escalation_routes.0.domain_prefix'],
      [[{ id: 'a', assignees: ['x', 'x'] }], 'escalation_routes.0.assignees'],
      [[{ id: 'a', ladder: [{ action: 'remind', after_ms: -1 }] }], 'escalation_routes.0.ladder.0.after_ms'],
      [
        [
          {
            id: 'a',
            ladder: [
              { action: 'default', after_ms: 1, outcome: 'approved' },
              { action: 'remind', after_ms: 1 },
            ],
          },
        ],
        'escalation_routes.0.ladder.0.action',
      ],
      [[{ id: 'a', ladder: [{ action: 'default', after_ms: 1, outcome: 'escalated' }] }], 'escalation_routes.0.ladder.0.outcome'],
      [[{ id: 'a', ladder: [{ action: 'reassign', after_ms: 1, to: [] }] }], 'escalation_routes.0.ladder.0.to'],
      [[{ id: 'a', sign_off: { required: 3, of: ['x', 'y'] } }], 'escalation_routes.0.sign_off.required'],
    ];
    for (const [config, field] of bad) {
      let caught: unknown;
      try {
        parseEscalationRoutes(config);
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(AcpError);
      expect([(caught as AcpError).field, config]).toEqual([field, config]);
    }
  });

  it('a good configuration parses to routes', () => {
    const routes: EscalationRoute[] = parseEscalationRoutes([
      {
        id: 'ops',
        domain_prefix: 'ops',
        assignees: ['team-sre'],
        ladder: [{ action: 'remind', after_ms: 5 }],
        sign_off: { required: 2, of: ['a', 'b', 'c'], veto: true },
      },
    ]);
    expect(routes).toEqual([
      {
        id: 'ops',
        domain_prefix: 'ops',
        assignees: ['team-sre'],
        ladder: [{ action: 'remind', after_ms: 5 }],
        sign_off: { required: 2, of: ['a', 'b', 'c'], veto: true },
      },
    ]);
  });
});
