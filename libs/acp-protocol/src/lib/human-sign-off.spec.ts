/** Issue 5: binding a human resolution to its escalation, and M-of-N sign-off with veto. */
import { P1, at, challenge, endorse, resolveByQuorum, resolveEscalation, submit, ulidOf } from '../testing/fixtures';
import { given, history } from '../testing/given-when-then';
import type { EscalationRouting } from './escalation-ladder';
import { signOffDecision } from './human-sign-off';
import { toDecisionEvent } from './decision-events';
import type { ProposalEvent } from './proposal.events';
import { projectProposal } from './proposal.projection';
import fc from 'fast-check';

const F = { domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 };
const HASH = 'sha256:abc';
let n = 9000;

function escalatedAndRouted(sign_off: EscalationRouting['sign_off']): { events: ProposalEvent[]; escalationId: string } {
  const events = history([submit(), endorse('a', F), challenge('b', F), resolveByQuorum()]);
  const escalationId = events[events.length - 1].event_id;
  const routing: EscalationRouting = { route_id: 'r', assignees: ['team'], ladder: [], sign_off };
  const routed = given(events)
    .when({
      type: 'RouteEscalation',
      command_id: ulidOf(n++),
      now: at(1),
      actor: 'desk',
      data: { proposal_id: P1, escalation_id: escalationId, payload_hash: HASH, routing },
    })
    .events();
  return { events: [...events, ...routed], escalationId };
}

describe('a human resolution is bound to the exact escalation it answers', () => {
  it('given a routed escalation, when resolved with its escalation id and payload hash, then EscalationResolved', () => {
    const { events, escalationId } = escalatedAndRouted(null);
    given(events)
      .when(resolveEscalation('approved', { resolved_by: 'human-pricing-lead', note: 'ok' }))
      .then([
        { type: 'EscalationResolved', data: { resolution: { outcome: 'approved', trigger: 'manual', resolved_by: 'human-pricing-lead' } } },
      ]);
    const bound = resolveEscalation('rejected');
    bound.data = { ...bound.data, escalation_id: escalationId, payload_hash: HASH };
    given(events)
      .when(bound)
      .then([{ type: 'EscalationResolved', data: { resolution: { outcome: 'rejected' } } }]);
  });

  it('given a routed escalation, when resolved for another escalation id, then NOT_ESCALATED', () => {
    const { events } = escalatedAndRouted(null);
    const stale = resolveEscalation('approved');
    stale.data = { ...stale.data, escalation_id: ulidOf(77) };
    given(events).when(stale).thenThrows('NOT_ESCALATED', 'escalation_id');
  });

  it('given a routed escalation, when resolved with another payload hash, then CONFLICT', () => {
    const { events } = escalatedAndRouted(null);
    const wrong = resolveEscalation('approved');
    wrong.data = { ...wrong.data, payload_hash: 'sha256:other' };
    given(events).when(wrong).thenThrows('CONFLICT', 'payload_hash');
  });

  it('given a resolved escalation, when resolved again, then NOT_ESCALATED: a resolution is used once', () => {
    const { events } = escalatedAndRouted(null);
    const once = [...events, ...given(events).when(resolveEscalation('approved')).events()];
    given(once).when(resolveEscalation('rejected')).thenThrows('NOT_ESCALATED', 'proposal_id');
  });
});

describe('M-of-N human sign-off', () => {
  const rule = { required: 2, of: ['alice', 'bob', 'carol'], veto: false };

  it('given 2-of-3, when one human approves, then the sign-off is recorded and the proposal stays escalated', () => {
    const { events } = escalatedAndRouted(rule);
    const { state } = given(events)
      .when(resolveEscalation('approved', { resolved_by: 'alice', note: 'fine' }))
      .then([
        {
          type: 'EscalationSignedOff',
          data: { sign_off: { by: 'alice', outcome: 'approved', note: 'fine' }, approvals: 1, rejections: 0, required: 2 },
        },
      ]);
    expect(state.status).toBe('escalated');
  });

  it('given one approval of 2-of-3, when a second human approves, then approved with both sign-offs on the decision event', () => {
    const { events } = escalatedAndRouted(rule);
    const one = [
      ...events,
      ...given(events)
        .when(resolveEscalation('approved', { resolved_by: 'alice' }))
        .events(),
    ];
    const { events: produced, state } = given(one)
      .when(resolveEscalation('approved', { resolved_by: 'carol', note: 'agreed' }))
      .then([
        { type: 'EscalationSignedOff', data: { approvals: 2 } },
        {
          type: 'EscalationResolved',
          data: { resolution: { outcome: 'approved', trigger: 'manual', resolved_by: 'carol', note: 'agreed' } },
        },
      ]);
    expect(projectProposal(state).status).toBe('resolved');
    expect(toDecisionEvent(produced[1], state)?.sign_offs?.map((s) => s.by)).toEqual(['alice', 'carol']);
  });

  it('given 2-of-3, when a human not named signs, then FORBIDDEN; when one signs twice, then DUPLICATE_RESPONSE', () => {
    const { events } = escalatedAndRouted(rule);
    given(events)
      .when(resolveEscalation('approved', { resolved_by: 'mallory' }))
      .thenThrows('FORBIDDEN', 'resolved_by');
    const one = [
      ...events,
      ...given(events)
        .when(resolveEscalation('approved', { resolved_by: 'alice' }))
        .events(),
    ];
    given(one)
      .when(resolveEscalation('rejected', { resolved_by: 'alice' }))
      .thenThrows('DUPLICATE_RESPONSE', 'resolved_by');
  });

  it('given a veto route, when any named human rejects, then rejected at once, flagged vetoed', () => {
    const { events } = escalatedAndRouted({ ...rule, veto: true });
    const one = [
      ...events,
      ...given(events)
        .when(resolveEscalation('approved', { resolved_by: 'alice' }))
        .events(),
    ];
    const { events: produced, state } = given(one)
      .when(resolveEscalation('rejected', { resolved_by: 'bob', note: 'no' }))
      .then([
        { type: 'EscalationSignedOff' },
        { type: 'EscalationResolved', data: { resolution: { outcome: 'rejected', vetoed: true, resolved_by: 'bob' } } },
      ]);
    expect(toDecisionEvent(produced[1], state)).toMatchObject({ outcome: 'rejected', vetoed: true });
  });

  it('property: the outcome is the first to reach M (or a veto), and never depends on who signed among equals', () => {
    fc.assert(
      fc.property(
        fc.array(fc.boolean(), { minLength: 0, maxLength: 5 }),
        fc.integer({ min: 1, max: 5 }),
        fc.boolean(),
        (votes, m, veto) => {
          const of = ['h0', 'h1', 'h2', 'h3', 'h4'];
          const r = { required: m, of, veto };
          const signOffs = votes.map((ok, i) => ({
            by: of[i],
            outcome: ok ? ('approved' as const) : ('rejected' as const),
            note: null,
            at: at(i),
          }));
          const d = signOffDecision(r, signOffs);
          const approvals = votes.filter(Boolean).length;
          const rejections = votes.length - approvals;
          if (veto && rejections > 0) expect(d).toEqual({ kind: 'resolve', outcome: 'rejected', by: 'veto' });
          else if (approvals >= m) expect(d).toMatchObject({ kind: 'resolve', outcome: 'approved' });
          else if (rejections >= m) expect(d).toMatchObject({ kind: 'resolve', outcome: 'rejected' });
          else expect(d.kind).toBe('wait');
          expect(signOffDecision(r, [...signOffs].reverse()).kind).toBe(d.kind);
        },
      ),
    );
  });
});
