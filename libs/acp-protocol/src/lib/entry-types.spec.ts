/** Spec 4.2 entry types: observation and hypothesis auto-resolve on submission. */
import { P1, T0, endorse, submit } from '../testing/fixtures';
import { given } from '../testing/given-when-then';
import { DEFAULT_DECIDER_CONFIG } from './proposal.decider';
import { handleProposalCommand } from './proposal.handler';
import { projectProposal } from './proposal.projection';
import { initialProposalState } from './proposal.state';

describe('4.2 entry types', () => {
  for (const type of ['observation', 'hypothesis'] as const) {
    it(`4.2 / 17.2 ${type === 'observation' ? 'an' : 'a'} ${type} auto-resolves on submission: resolved, approved, trigger quorum, auto_resolved true`, () => {
      const { state } = given([])
        .when(submit({ type }))
        .then([
          { type: 'ProposalSubmitted' },
          {
            type: 'ProposalResolved',
            data: {
              proposal_id: P1,
              resolution: { outcome: 'approved', trigger: 'quorum', votes_for: 0, votes_against: 0, decided_at: T0, auto_resolved: true },
            },
          },
        ]);
      expect(projectProposal(state)).toMatchObject({ type, status: 'resolved', resolution: { auto_resolved: true } });
      given([submit({ type })])
        .when(endorse('a', { domain_authority: 1, confidence: 1, trust_score: 1 }))
        .thenThrows('PROPOSAL_NOT_PENDING');
    });
  }

  it('4.2 an auto-resolution publishes one decision event flagged auto_resolved', () => {
    const r = handleProposalCommand(initialProposalState, submit({ type: 'observation' }));
    expect(r.decisions).toMatchObject([{ outcome: 'approved', trigger: 'quorum', auto_resolved: true }]);
  });

  it('4.2 policy escalation rules do not apply to observations (they need no consensus)', () => {
    const config = { ...DEFAULT_DECIDER_CONFIG, escalationPolicies: [{ id: 'all' }] };
    given([], config)
      .when(submit({ type: 'observation' }))
      .then([{ type: 'ProposalSubmitted' }, { type: 'ProposalResolved' }]);
  });

  it('4.2 a proposal (type proposal) requires consensus and stays pending', () => {
    given([])
      .when(submit({ type: 'proposal' }))
      .then([{ type: 'ProposalSubmitted' }]);
  });

  it('9.3 only a proposal can depend on children', () => {
    given([])
      .when(submit({ type: 'hypothesis', depends_on: ['01J0000000AAAAAAAAAAAAAAAA'] }))
      .thenThrows('SCHEMA_VIOLATION', 'depends_on');
  });
});
