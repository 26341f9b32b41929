import { ConclaveHarness } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

/**
 * RFC Appendix C, end to end: agents use the SDK over real NATS; intake, resolver and sweeper run
 * as real NestJS services; a downstream consumer reads the ACP_DECISIONS stream.
 */
describe('Appendix C scenarios end to end (intake + resolver + sweeper over NATS)', () => {
  const h = new ConclaveHarness();
  let decisions: DecisionCollector;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'sweeper');
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  const now = () => new Date().toISOString();

  it('C.1 2-of-3 endorsement: APPROVED by QUORUM, votes_for 1.1645', async () => {
    const p = await h.client.propose({
      domain: 'risk.credit',
      author: 'agent-risk-001',
      payload: { action: 'approve_loan' },
      quorum: 2,
      created_at: now(),
    });
    expect(p.status).toBe('pending');
    await h.client.endorse(p.proposal_id, { participant_id: 'agent-a', domain_authority: 0.9, confidence: 0.85, trust_score: 0.9 });
    await h.client.endorse(p.proposal_id, { participant_id: 'agent-b', domain_authority: 0.8, confidence: 0.7, trust_score: 0.85 });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({
      event_type: 'decision',
      outcome: 'approved',
      trigger: 'quorum',
      votes_for: 1.1645,
      votes_against: 0,
      domain: 'risk.credit',
      caused_by: p.proposal_id,
    });
    const after = await h.client.get(p.proposal_id);
    expect(after.status).toBe('resolved');
    expect(after.responses.map((r) => r.weight)).toEqual([0.6885, 0.476]);
  });

  it('C.2 weighted domain experts: REJECTED by QUORUM despite 1-1', async () => {
    const p = await h.client.propose({
      domain: 'ops.deploy',
      author: 'agent-ops',
      payload: { action: 'deploy' },
      quorum: 2,
      created_at: now(),
    });
    await h.client.challenge(p.proposal_id, { participant_id: 'senior', domain_authority: 0.95, confidence: 0.9, trust_score: 0.95 });
    await h.client.endorse(p.proposal_id, { participant_id: 'junior', domain_authority: 0.4, confidence: 0.6, trust_score: 0.7 });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'rejected', trigger: 'quorum', votes_for: 0.168, votes_against: 0.81225 });
  });

  it('C.3 timeout with partial responses: APPROVED by TIMEOUT, decided by the sweeper on time (not before expires_at + grace, within the 5 s expiry objective after it)', async () => {
    const p = await h.client.propose({
      domain: 'finance.budget',
      author: 'agent-fin',
      payload: { action: 'raise_budget' },
      quorum: 3,
      created_at: now(),
      expires_at: new Date(Date.now() + 1500).toISOString(),
    });
    await h.client.endorse(p.proposal_id, { participant_id: 'agent-a', domain_authority: 0.8, confidence: 0.75, trust_score: 0.9 });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'approved', trigger: 'timeout', votes_for: 0.54, votes_against: 0 });
    // decided_at is the sweeper's clock when its ExpireProposal was recorded
    const deadline = Date.parse(p.expires_at!) + Number(h.env['CONCLAVE_EXPIRY_GRACE_MS']);
    expect(Date.parse(d.decided_at)).toBeGreaterThanOrEqual(deadline);
    expect(Date.parse(d.decided_at)).toBeLessThanOrEqual(deadline + 5_000);
  });

  it('C.4 escalation from tie: ESCALATED by QUORUM (the human step is covered by the escalation service)', async () => {
    const p = await h.client.propose({
      domain: 'strategy.pricing',
      author: 'agent-pricing',
      payload: { action: 'raise_price' },
      quorum: 2,
      created_at: now(),
    });
    await h.client.endorse(p.proposal_id, { participant_id: 'agent-a', domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 });
    await h.client.challenge(p.proposal_id, { participant_id: 'agent-b', domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'escalated', trigger: 'quorum', votes_for: 0.648, votes_against: 0.648 });
    expect((await h.client.get(p.proposal_id)).status).toBe('escalated');
  });
});
