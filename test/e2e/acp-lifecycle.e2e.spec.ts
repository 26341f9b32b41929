import { ConclaveHarness, eventually } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

/** RFC 8.2 (table B.4), 10.1, 4.2, 9.3, DESIGN section 2 ties, and the list query, end to end. */
describe('proposal lifecycle end to end (intake + resolver + sweeper over NATS)', () => {
  const h = new ConclaveHarness();
  let decisions: DecisionCollector;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'sweeper');
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  const now = () => new Date().toISOString();
  const soon = (ms = 400) => new Date(Date.now() + ms).toISOString();
  const propose = (over: Record<string, unknown> = {}) =>
    h.client.propose({ domain: 'ops.deploy', author: 'proposer', payload: { n: 1 }, quorum: 5, created_at: now(), ...over });
  const vote = { domain_authority: 0.5, confidence: 0.5, trust_score: 0.5 };

  describe('8.2 expiration outcomes (quorum not met at expires_at)', () => {
    it('given no responses, when it expires, then EXPIRED with trigger TIMEOUT', async () => {
      const p = await propose({ expires_at: soon() });
      const [d] = await decisions.waitFor(p.proposal_id);
      expect(d).toMatchObject({ outcome: 'expired', trigger: 'timeout', votes_for: 0, votes_against: 0 });
      expect((await h.client.get(p.proposal_id)).status).toBe('expired');
    });

    it('given more endorsement weight, then APPROVED by TIMEOUT', async () => {
      const p = await propose({ expires_at: soon() });
      await h.client.endorse(p.proposal_id, { participant_id: 'a', ...vote });
      expect((await decisions.waitFor(p.proposal_id))[0]).toMatchObject({ outcome: 'approved', trigger: 'timeout' });
    });

    it('given more challenge weight, then REJECTED by TIMEOUT', async () => {
      const p = await propose({ expires_at: soon() });
      await h.client.challenge(p.proposal_id, { participant_id: 'a', ...vote });
      expect((await decisions.waitFor(p.proposal_id))[0]).toMatchObject({ outcome: 'rejected', trigger: 'timeout', votes_against: 0.125 });
    });

    it('given equal weight, then ESCALATED by TIMEOUT and the proposal awaits a human', async () => {
      const p = await propose({ expires_at: soon() });
      await h.client.endorse(p.proposal_id, { participant_id: 'a', ...vote });
      await h.client.challenge(p.proposal_id, { participant_id: 'b', ...vote });
      expect((await decisions.waitFor(p.proposal_id))[0]).toMatchObject({ outcome: 'escalated', trigger: 'timeout' });
      expect((await h.client.get(p.proposal_id)).status).toBe('escalated');
    });

    it('8.4 given expires_at null, then it never expires and stays pending', async () => {
      const p = await propose({ expires_at: null });
      const later = await propose({ expires_at: soon(200) });
      await decisions.waitFor(later.proposal_id);
      expect((await h.client.get(p.proposal_id)).status).toBe('pending');
      expect(decisions.for(p.proposal_id)).toHaveLength(0);
    });
  });

  it('DESIGN 2: 0.1 + 0.2 endorsing against 0.3 challenging is an exact tie, and escalates', async () => {
    const p = await propose({ quorum: 3 });
    await h.client.endorse(p.proposal_id, { participant_id: 'a', domain_authority: 1, confidence: 0.1, trust_score: 1 });
    await h.client.endorse(p.proposal_id, { participant_id: 'b', domain_authority: 1, confidence: 0.2, trust_score: 1 });
    await h.client.challenge(p.proposal_id, { participant_id: 'c', domain_authority: 1, confidence: 0.3, trust_score: 1 });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'escalated', trigger: 'quorum', votes_for: 0.3, votes_against: 0.3 });
  });

  it('10.1 item 2: a manual escalation records who asked and why, and emits a decision event', async () => {
    const p = await propose();

    const escalated = await h.client.escalate(p.proposal_id, { reason: 'touches production', requested_by: 'sre-oncall' });

    // The kind of escalation is `reason: manual`; the requester's own words are kept as `note`.
    const why = { reason: 'manual', requested_by: 'sre-oncall', note: 'touches production', escalated_at: expect.any(String) };
    expect(escalated).toMatchObject({ status: 'escalated', resolution: { outcome: 'escalated', trigger: 'manual', escalation: why } });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'escalated', trigger: 'manual', escalation: why });
    expect(d.escalation?.escalated_at).toBe(escalated.resolution?.escalation?.escalated_at);
  });

  it('4.2 an observation auto-resolves on submission', async () => {
    const p = await propose({ type: 'observation' });
    expect(p.status).toBe('resolved');
    expect((await decisions.waitFor(p.proposal_id))[0]).toMatchObject({ outcome: 'approved', auto_resolved: true });
  });

  it('9.3 a parent resolves only when all its children have, and is approved when all are', async () => {
    const c1 = await propose({ domain: 'risk.credit', quorum: 1 });
    const c2 = await propose({ domain: 'ops.deploy', quorum: 1 });
    const parent = await propose({ domain: 'strategy', quorum: 1, depends_on: [c1.proposal_id, c2.proposal_id] });
    await h.client.endorse(c1.proposal_id, { participant_id: 'a', ...vote });
    await decisions.waitFor(c1.proposal_id);
    expect((await h.client.get(parent.proposal_id)).status).toBe('pending');
    await h.client.endorse(c2.proposal_id, { participant_id: 'a', ...vote });
    const [d] = await decisions.waitFor(parent.proposal_id);
    expect(d).toMatchObject({ outcome: 'approved', trigger: 'quorum', votes_for: 2, votes_against: 0 });
  });

  it('acp.v1.list pages through proposals by domain and status with a cursor', async () => {
    const mine = [];
    for (let i = 0; i < 5; i++) mine.push((await propose({ domain: 'listing.test' })).proposal_id);
    // The index follows the log: page by two until all five are listed.
    const pageAll = async (): Promise<string[]> => {
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await h.client.list({ domain: 'listing', status: 'pending', limit: 2, cursor });
        seen.push(...page.proposals.map((p) => p.proposal_id));
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      return seen;
    };
    const seen = await eventually(
      async () => {
        const ids = await pageAll();
        return ids.length >= 5 ? ids : undefined;
      },
      10_000,
      'five listed proposals',
    );
    expect(seen).toEqual(mine);
  });
});
