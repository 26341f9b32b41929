import { SecureConclaveHarness } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

/**
 * Issue 6 "done when": with CONCLAVE_AUTH_MODE=required, the Appendix C scenarios pass end to end
 * through the SDK. Every command is signed by its participant; responses declare no factors:
 * domain_authority and trust_score are stamped from each participant's registry grant.
 */
describe('Appendix C with authentication required (signed SDK clients, registry-stamped factors)', () => {
  const h = new SecureConclaveHarness();
  let decisions: DecisionCollector;
  const now = () => new Date().toISOString();

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'sweeper');
    await h.seed([
      { participant_id: 'agent-risk-001', grants: [{ domain: 'risk', domain_authority: 0.5, trust_score: 0.5, actions: ['propose'] }] },
      { participant_id: 'agent-ops', grants: [{ domain: 'ops', domain_authority: 0.5, trust_score: 0.5, actions: ['propose'] }] },
      { participant_id: 'agent-fin', grants: [{ domain: 'finance', domain_authority: 0.5, trust_score: 0.5, actions: ['propose'] }] },
      { participant_id: 'agent-pricing', grants: [{ domain: 'strategy', domain_authority: 0.5, trust_score: 0.5, actions: ['propose'] }] },
      {
        participant_id: 'agent-a',
        grants: [
          { domain: 'risk.credit', domain_authority: 0.9, trust_score: 0.9 },
          { domain: 'finance.budget', domain_authority: 0.8, trust_score: 0.9 },
          { domain: 'strategy.pricing', domain_authority: 0.9, trust_score: 0.9 },
        ],
      },
      {
        participant_id: 'agent-b',
        grants: [
          { domain: 'risk.credit', domain_authority: 0.8, trust_score: 0.85 },
          { domain: 'strategy.pricing', domain_authority: 0.9, trust_score: 0.9 },
        ],
      },
      { participant_id: 'senior', grants: [{ domain: 'ops.deploy', domain_authority: 0.95, trust_score: 0.95 }] },
      { participant_id: 'junior', grants: [{ domain: 'ops', domain_authority: 0.4, trust_score: 0.7 }] },
    ]);
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  it('C.1 2-of-3 endorsement: APPROVED by QUORUM, votes_for 1.1645', async () => {
    const author = await h.clientFor('agent-risk-001');
    const p = await author.propose({
      domain: 'risk.credit',
      author: 'agent-risk-001',
      payload: { action: 'approve_loan' },
      quorum: 2,
      created_at: now(),
    });
    expect(p.payload_hash).toMatch(/^[0-9a-f]{64}$/);
    await (await h.clientFor('agent-a')).endorse(p.proposal_id, { participant_id: 'agent-a', confidence: 0.85 });
    await (await h.clientFor('agent-b')).endorse(p.proposal_id, { participant_id: 'agent-b', confidence: 0.7 });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'approved', trigger: 'quorum', votes_for: 1.1645, votes_against: 0, payload_hash: p.payload_hash });
    const after = await author.get(p.proposal_id);
    expect(after.responses.map((r) => [r.domain_authority, r.trust_score, r.weight])).toEqual([
      [0.9, 0.9, 0.6885],
      [0.8, 0.85, 0.476],
    ]);
  });

  it('C.2 weighted domain experts: REJECTED by QUORUM despite 1-1 (junior stamped from its grant on the parent domain ops)', async () => {
    const p = await (
      await h.clientFor('agent-ops')
    ).propose({ domain: 'ops.deploy', author: 'agent-ops', payload: { action: 'deploy' }, quorum: 2, created_at: now() });
    await (await h.clientFor('senior')).challenge(p.proposal_id, { participant_id: 'senior', confidence: 0.9 });
    await (await h.clientFor('junior')).endorse(p.proposal_id, { participant_id: 'junior', confidence: 0.6 });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'rejected', trigger: 'quorum', votes_for: 0.168, votes_against: 0.81225 });
  });

  it('C.3 timeout with partial responses: APPROVED by TIMEOUT', async () => {
    const p = await (
      await h.clientFor('agent-fin')
    ).propose({
      domain: 'finance.budget',
      author: 'agent-fin',
      payload: { action: 'raise_budget' },
      quorum: 3,
      created_at: now(),
      expires_at: new Date(Date.now() + 1500).toISOString(),
    });
    await (await h.clientFor('agent-a')).endorse(p.proposal_id, { participant_id: 'agent-a', confidence: 0.75 });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'approved', trigger: 'timeout', votes_for: 0.54, votes_against: 0 });
  });

  it('C.4 escalation from tie: ESCALATED by QUORUM', async () => {
    const p = await (
      await h.clientFor('agent-pricing')
    ).propose({ domain: 'strategy.pricing', author: 'agent-pricing', payload: { action: 'raise_price' }, quorum: 2, created_at: now() });
    await (await h.clientFor('agent-a')).endorse(p.proposal_id, { participant_id: 'agent-a', confidence: 0.8 });
    await (await h.clientFor('agent-b')).challenge(p.proposal_id, { participant_id: 'agent-b', confidence: 0.8 });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'escalated', trigger: 'quorum', votes_for: 0.648, votes_against: 0.648 });
  });

  it('an unsigned client is refused with UNAUTHENTICATED', async () => {
    await expect(
      h.client.propose({ domain: 'risk.credit', author: 'agent-risk-001', payload: {}, quorum: 1, created_at: now() }),
    ).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });
});
