import { SecureConclaveHarness, eventually } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

const now = () => new Date().toISOString();

/**
 * C.4 with authentication required everywhere (the security issue's registry): the agents sign
 * their commands, and the human signs `acp.v1.resolve` too; the escalation service authorizes
 * `resolve` in the proposal's domain (human-resolver role + a domain grant).
 */
describe('escalation with the participant registry: signed acp.v1.resolve, resolve authorized per domain', () => {
  const h = new SecureConclaveHarness();
  let decisions: DecisionCollector;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'escalation');
    await h.seed([
      { participant_id: 'agent-pricing', grants: [{ domain: 'strategy', domain_authority: 0.5, trust_score: 0.5, actions: ['propose'] }] },
      { participant_id: 'agent-a', grants: [{ domain: 'strategy', domain_authority: 0.9, trust_score: 0.9, actions: ['respond'] }] },
      { participant_id: 'agent-b', grants: [{ domain: 'strategy', domain_authority: 0.9, trust_score: 0.9, actions: ['respond'] }] },
      {
        participant_id: 'human-pricing-lead',
        roles: ['human-resolver'],
        grants: [{ domain: 'strategy', domain_authority: 1, trust_score: 1, actions: ['resolve'] }],
      },
      {
        participant_id: 'human-ops-lead',
        roles: ['human-resolver'],
        grants: [{ domain: 'ops', domain_authority: 1, trust_score: 1, actions: ['resolve'] }],
      },
    ]);
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  it('C.4 given a signed tie, when a human of another domain or an agent signs a resolution, then FORBIDDEN; when the pricing lead signs it, then APPROVED by them', async () => {
    const author = await h.clientFor('agent-pricing');
    const p = await author.propose({
      domain: 'strategy.pricing',
      author: 'agent-pricing',
      payload: { action: 'raise_price' },
      quorum: 2,
      created_at: now(),
    });
    await (await h.clientFor('agent-a')).endorse(p.proposal_id, { participant_id: 'agent-a', confidence: 0.8 });
    await (await h.clientFor('agent-b')).challenge(p.proposal_id, { participant_id: 'agent-b', confidence: 0.8 });
    const [escalated] = await decisions.waitFor(p.proposal_id);
    expect(escalated).toMatchObject({ outcome: 'escalated', trigger: 'quorum' });
    await eventually(async () =>
      (await (await h.clientFor('human-pricing-lead')).escalations()).some((e) => e.proposal_id === p.proposal_id && e.routed)
        ? true
        : undefined,
    );

    await expect(
      (await h.clientFor('human-ops-lead')).resolve(p.proposal_id, { outcome: 'approved', note: 'not my domain' }),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(
      (await h.clientFor('agent-a')).resolve(p.proposal_id, { outcome: 'approved', note: 'I am no human' }),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(
      h.client.resolve(p.proposal_id, { outcome: 'approved', resolved_by: 'human-pricing-lead', note: 'unsigned' }),
    ).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await (await h.clientFor('human-pricing-lead')).escalation(p.proposal_id)).escalation.status).toBe('open');

    const lead = await h.clientFor('human-pricing-lead');
    const resolved = await lead.resolve(p.proposal_id, {
      outcome: 'approved',
      resolved_by: 'human-pricing-lead',
      note: 'Pricing change approved after review',
    });
    expect(resolved.resolution).toMatchObject({ outcome: 'approved', trigger: 'manual', resolved_by: 'human-pricing-lead' });
    const [, d] = await decisions.waitFor(p.proposal_id, 2);
    expect(d).toMatchObject({ outcome: 'approved', trigger: 'manual', resolved_by: 'human-pricing-lead' });
  });
});
