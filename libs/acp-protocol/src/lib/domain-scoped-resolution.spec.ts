/** Spec section 9: domains (9.1) and cross-domain parent/child proposals (9.3). */
import { P1, P2, P3, endorse, escalate, expire, min, recordChild, resolveByQuorum, resolveEscalation, submit } from '../testing/fixtures';
import { given, stateAfter } from '../testing/given-when-then';
import { childOutcomeOf, isDomain, isWithinDomain } from './domain-scoped-resolution';
import { resolverReactions } from './proposal.workflows';
import { pendingResolution, projectProposal } from './proposal.projection';

describe('9.1 domain namespaces', () => {
  it('9.1 domains are hierarchical, case-sensitive, NATS-token safe', () => {
    for (const ok of ['risk', 'risk.credit', 'ops.deploy-eu_1', 'Risk.Credit']) expect(isDomain(ok)).toBe(true);
    for (const bad of ['', '.risk', 'risk.', 'risk..credit', 'risk.*', 'risk.>', 'risk credit', 'risque.crédit', 5, null])
      expect(isDomain(bad)).toBe(false);
    expect(isWithinDomain('risk.credit', 'risk')).toBe(true);
    expect(isWithinDomain('Risk.credit', 'risk')).toBe(false);
    expect(isWithinDomain('riskier', 'risk')).toBe(false);
  });
});

describe('9.3 cross-domain parent/child proposals', () => {
  const parent = submit({ proposal_id: P1, domain: 'strategy.pricing', depends_on: [P2, P3] });

  it('9.3 the parent resolves only when all its children have a final outcome', () => {
    expect(pendingResolution(stateAfter([parent]))).toBeUndefined();
    expect(pendingResolution(stateAfter([parent, recordChild(P2, 'approved')]))).toBeUndefined();
    given([parent, recordChild(P2, 'approved')])
      .when(resolveByQuorum())
      .thenThrows('CONFLICT', 'proposal_id', /child/);
    expect(pendingResolution(stateAfter([parent, recordChild(P2, 'approved'), recordChild(P3, 'approved')]))).toEqual({ proposal_id: P1 });
  });

  it('9.3 all children approved -> parent approved (trigger quorum, votes = child counts, child_outcomes recorded)', () => {
    const { state } = given([parent, recordChild(P2, 'approved'), recordChild(P3, 'approved')])
      .when(resolveByQuorum())
      .then([
        {
          type: 'ProposalResolved',
          data: {
            resolution: {
              outcome: 'approved',
              trigger: 'quorum',
              votes_for: 2,
              votes_against: 0,
              child_outcomes: { [P2]: 'approved', [P3]: 'approved' },
            },
          },
        },
      ]);
    expect(projectProposal(state)).toMatchObject({ status: 'resolved', depends_on: [P2, P3] });
  });

  it('9.3 any child rejected or expired -> parent rejected', () => {
    for (const bad of ['rejected', 'expired'] as const) {
      given([parent, recordChild(P2, 'approved'), recordChild(P3, bad)])
        .when(resolveByQuorum())
        .then([{ type: 'ProposalResolved', data: { resolution: { outcome: 'rejected', votes_for: 1, votes_against: 1 } } }]);
    }
  });

  it('9.3 an escalated child has no outcome yet (wait); after the human resolves it, it counts with that outcome', () => {
    // Given: P3 approved, and P2 escalated on its own stream.
    const child = [submit({ proposal_id: P2, domain: 'risk.credit' }), escalate('needs a human', { proposal_id: P2 })];
    const escalated = stateAfter(child);
    expect(escalated.status).toBe('escalated');
    const waiting = [parent, recordChild(P3, 'approved')];

    // Then: the escalated child tells its parent nothing, and the parent waits for it.
    expect(childOutcomeOf({ outcome: 'escalated' })).toBeUndefined();
    expect(resolverReactions(escalated, [P1])).toEqual([]);
    expect(pendingResolution(stateAfter(waiting))).toBeUndefined();
    given(waiting).when(resolveByQuorum()).thenThrows('CONFLICT', 'proposal_id', /child/);

    for (const [human, parentResult] of [
      ['approved', 'approved'],
      ['rejected', 'rejected'],
    ] as const) {
      // When: a human resolves the child's escalation.
      const resolved = stateAfter([...child, resolveEscalation(human, { proposal_id: P2 })]);

      // Then: the child counts with the human's outcome, and with it the parent resolves.
      const reactions = resolverReactions(resolved, [P1]);
      expect(reactions).toEqual([{ kind: 'record-child-outcome', proposal_id: P1, child_proposal_id: P2, outcome: human }]);
      given([...waiting, recordChild(P2, human)])
        .when(resolveByQuorum())
        .then([
          {
            type: 'ProposalResolved',
            data: { resolution: { outcome: parentResult, trigger: 'quorum', child_outcomes: { [P2]: human, [P3]: 'approved' } } },
          },
        ]);
    }
  });

  it('9.3 recording the same child outcome twice is a no-op; a contradicting one is a CONFLICT', () => {
    given([parent, recordChild(P2, 'approved')])
      .when(recordChild(P2, 'approved'))
      .thenNothingHappened();
    given([parent, recordChild(P2, 'approved')])
      .when(recordChild(P2, 'rejected'))
      .thenThrows('CONFLICT');
  });

  it('9.3 only declared children, only final outcomes', () => {
    given([parent]).when(recordChild('01J0000000ZZZZZZZZZZZZZZZZ', 'approved')).thenThrows('SCHEMA_VIOLATION', 'child_proposal_id');
    given([parent])
      .when(recordChild(P2, 'escalated' as never))
      .thenThrows('SCHEMA_VIOLATION', 'outcome');
  });

  it('9.3 a parent takes no responses of its own (its children decide); it can still be escalated or expire', () => {
    given([parent])
      .when(endorse('a', { domain_authority: 1, confidence: 1, trust_score: 1 }))
      .thenThrows('SCHEMA_VIOLATION', 'proposal_id', /parent/);
    given([parent])
      .when(escalate())
      .then([{ type: 'ProposalEscalated' }]);
    given([parent])
      .when(expire(min(5)))
      .then([{ type: 'ProposalExpired' }]);
    given([parent, expire(min(5))])
      .when(recordChild(P2, 'approved'))
      .thenThrows('PROPOSAL_NOT_PENDING');
  });

  it('9.3 a parent must not depend on itself or repeat a child', () => {
    given([])
      .when(submit({ depends_on: [P1] }))
      .thenThrows('SCHEMA_VIOLATION', 'depends_on');
    given([])
      .when(submit({ depends_on: [P2, P2] }))
      .thenThrows('SCHEMA_VIOLATION', 'depends_on');
    given([])
      .when(submit({ depends_on: ['nope'] }))
      .thenThrows('INVALID_ID', 'depends_on.0');
  });
});
