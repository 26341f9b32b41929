/**
 * Spec Appendix C, the four example scenarios, exactly: weights, reported votes, outcome, trigger.
 */
import { P1, T0, at, challenge, endorse, expire, min, resolveByQuorum, resolveEscalation, submit } from '../testing/fixtures';
import { given, history } from '../testing/given-when-then';
import { toDecimalString } from './exact-decimal';
import { handleProposalCommand } from './proposal.handler';
import { pendingResolution, projectProposal } from './proposal.projection';
import { foldProposal, initialProposalState } from './proposal.state';
import { computeWeight } from './weighted-voting';

describe('Appendix C: example scenarios', () => {
  it('C.1 2-of-3 endorsement: weights 0.6885 and 0.476, votes_for 1.1645, APPROVED (trigger QUORUM)', () => {
    const a = { domain_authority: 0.9, confidence: 0.85, trust_score: 0.9 };
    const b = { domain_authority: 0.8, confidence: 0.7, trust_score: 0.85 };
    expect(computeWeight(a).weight).toBe(0.6885);
    expect(computeWeight(b).weight).toBe(0.476);

    const commands = [submit({ domain: 'risk.credit', quorum: 2 }), endorse('agent-a', a), endorse('agent-b', b)];
    const state = foldProposal(history(commands));
    // Quorum reached: 2 responses >= 2; the third agent never needs to respond.
    expect(pendingResolution(state)).toEqual({ proposal_id: P1 });
    given(commands)
      .when(endorse('agent-c', { domain_authority: 0.5, confidence: 0.5, trust_score: 0.5 }))
      .thenThrows('PROPOSAL_NOT_PENDING', 'proposal_id', /quorum/);

    const { state: resolved } = given(commands)
      .when(resolveByQuorum({ now: at(90) }))
      .then([
        {
          type: 'ProposalResolved',
          data: {
            proposal_id: P1,
            resolution: {
              schema_version: '1.0',
              outcome: 'approved',
              trigger: 'quorum',
              votes_for: 1.1645,
              votes_against: 0,
              decided_at: at(90),
            },
          },
        },
      ]);
    expect(projectProposal(resolved).responses.map((r) => r.weight)).toEqual([0.6885, 0.476]);
    expect(projectProposal(resolved).status).toBe('resolved');
  });

  it('C.2 weighted domain experts: senior challenge weight 0.81225 (spec rounds to 0.8123), junior 0.168, REJECTED (trigger QUORUM)', () => {
    const senior = { domain_authority: 0.95, confidence: 0.9, trust_score: 0.95 };
    const junior = { domain_authority: 0.4, confidence: 0.6, trust_score: 0.7 };
    expect(toDecimalString(computeWeight(senior).exact)).toBe('0.81225');
    expect(computeWeight(senior).weight).toBe(0.81225);
    expect(computeWeight(junior).weight).toBe(0.168);

    given([submit({ domain: 'ops.deploy', quorum: 2 }), challenge('senior', senior), endorse('junior', junior)])
      .when(resolveByQuorum())
      .then([
        {
          type: 'ProposalResolved',
          data: { resolution: { outcome: 'rejected', trigger: 'quorum', votes_for: 0.168, votes_against: 0.81225 } },
        },
      ]);
  });

  it('C.3 timeout with partial responses: one endorsement 0.54 at expiry, quorum 3 not met, APPROVED (trigger TIMEOUT)', () => {
    const a = { domain_authority: 0.8, confidence: 0.75, trust_score: 0.9 };
    expect(computeWeight(a).weight).toBe(0.54);
    const commands = [submit({ domain: 'finance.budget', quorum: 3, expires_at: min(5) }), endorse('agent-a', a)];
    expect(pendingResolution(foldProposal(history(commands)))).toBeUndefined();
    given(commands)
      .when(expire(min(5)))
      .then([
        {
          type: 'ProposalResolved',
          data: { resolution: { outcome: 'approved', trigger: 'timeout', votes_for: 0.54, votes_against: 0, decided_at: min(5) } },
        },
      ]);
  });

  it('C.4 escalation from tie: 0.648 vs 0.648 ESCALATED (trigger QUORUM), then human APPROVED (trigger MANUAL)', () => {
    const f = { domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 };
    expect(computeWeight(f).weight).toBe(0.648);
    const commands = [submit({ domain: 'strategy.pricing', quorum: 2 }), endorse('agent-a', f), challenge('agent-b', f)];

    let state = foldProposal(history(commands));
    const escalated = handleProposalCommand(state, resolveByQuorum({ now: at(120) }));
    expect(escalated.events).toMatchObject([
      {
        type: 'ProposalEscalated',
        data: {
          resolution: { outcome: 'escalated', trigger: 'quorum', votes_for: 0.648, votes_against: 0.648 },
          escalation: { reason: 'tie', escalated_at: at(120) },
        },
      },
    ]);
    expect(escalated.decisions).toMatchObject([{ outcome: 'escalated', trigger: 'quorum' }]);
    state = escalated.state;
    expect(state.status).toBe('escalated');

    const human = handleProposalCommand(state, resolveEscalation('approved', { now: at(600) }));
    expect(human.events).toMatchObject([
      {
        type: 'EscalationResolved',
        data: { resolution: { outcome: 'approved', trigger: 'manual', votes_for: 0.648, votes_against: 0.648 } },
      },
    ]);
    expect(human.decisions).toMatchObject([{ outcome: 'approved', trigger: 'manual', resolved_by: 'human:alice' }]);
    expect(projectProposal(human.state)).toMatchObject({ status: 'resolved', resolution: { outcome: 'approved', trigger: 'manual' } });
    expect(initialProposalState.status).toBe('initial');
    expect(T0).toBe('2025-01-15T10:00:00Z');
  });
});
