import { DecisionEvent, DomainPolicyDocument, POLICY_PATTERNS, Proposal } from '@conclave/acp-protocol';
import { ConclaveError } from '@conclave/sdk';
import { SecureConclaveHarness } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

/**
 * Custom policies per domain (RFC 18.1/18.2) end to end, with authentication required: an
 * administrator records a declarative policy document through the registry API; proposals
 * submitted in the domain are decided by it (quorum and weights), each decision event names the
 * version that decided it, and a later version governs only later proposals. Written as an
 * attacker too: a non-administrator cannot set a policy, and a proposal cannot bring its own.
 */
describe('domain policy documents: administered through the registry API, applied by the services', () => {
  const h = new SecureConclaveHarness();
  let decisions: DecisionCollector;
  const now = () => new Date().toISOString();

  const v1: DomainPolicyDocument = {
    schema_version: '1.0',
    domain: 'risk',
    version: 1,
    description: 'credit risk: a senior reviewer must weigh in',
    weight_function: { kind: 'linear', coefficients: { domain_authority: 0.5, confidence: 0.5, trust_score: 0 } },
    quorum_policies: [{ kind: 'senior-plus-one', min_responses: 2, required_participants: ['senior'] }],
    default_quorum_policy: { kind: 'senior-plus-one' },
    max_weighted_threshold: 2,
  };

  async function refusal(p: Promise<unknown>): Promise<ConclaveError> {
    try {
      await p;
    } catch (err) {
      if (err instanceof ConclaveError) return err;
      throw err;
    }
    throw new Error('expected a refusal');
  }

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'sweeper');
    await h.seed([
      { participant_id: 'author', grants: [{ domain: 'risk', domain_authority: 0.5, trust_score: 0.5, actions: ['propose'] }] },
      { participant_id: 'junior-a', grants: [{ domain: 'risk', domain_authority: 0.4, trust_score: 0.9 }] },
      { participant_id: 'junior-b', grants: [{ domain: 'risk', domain_authority: 0.6, trust_score: 0.9 }] },
      { participant_id: 'senior', grants: [{ domain: 'risk', domain_authority: 1, trust_score: 1 }] },
    ]);
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  const set = (policy: unknown, who = h.admin) => who.call<{ policy: DomainPolicyDocument }>(POLICY_PATTERNS.set, { policy });

  it('an administrator records version 1; it is validated on load; versions go up by one', async () => {
    expect(
      await refusal(
        set({ ...v1, weight_function: { kind: 'linear', coefficients: { domain_authority: 1, confidence: 1, trust_score: 0 } } }),
      ),
    ).toMatchObject({
      code: 'SCHEMA_VIOLATION',
      field: 'weight_function.coefficients',
    });
    expect(await refusal(set({ ...v1, version: 2 }))).toMatchObject({ code: 'CONFLICT', field: 'version' });
    expect((await set(v1)).policy).toEqual(v1);
    // The same document again is a retry, not a new version.
    expect((await set(v1)).policy.version).toBe(1);
    const got = await h.admin.call<{ policy: DomainPolicyDocument; governing: DomainPolicyDocument }>(POLICY_PATTERNS.get, {
      domain: 'risk.credit',
    });
    expect(got).toMatchObject({ policy: null, governing: v1 });
  });

  it('an attacker without the administrator role cannot set a policy: FORBIDDEN', async () => {
    const junior = await h.clientFor('junior-a');
    expect(await refusal(set({ ...v1, version: 2, default_quorum_policy: { kind: 'count' } }, junior))).toMatchObject({
      code: 'FORBIDDEN',
    });
  });

  it("the domain's default custom policy and weight function decide: two juniors are not enough, the senior's vote resolves", async () => {
    const author = await h.clientFor('author');
    const p = await author.propose({
      domain: 'risk.credit',
      author: 'author',
      payload: { action: 'approve_loan' },
      quorum: 1,
      created_at: now(),
    });
    expect(p.policy).toEqual(v1);
    await (await h.clientFor('junior-a')).endorse(p.proposal_id, { participant_id: 'junior-a', confidence: 0.8 });
    const afterTwo = await (await h.clientFor('junior-b')).challenge(p.proposal_id, { participant_id: 'junior-b', confidence: 0.2 });
    // quorum 1 under the built-in count policy would have resolved at the first vote.
    expect(afterTwo.status).toBe('pending');
    // 0.5 x authority + 0.5 x confidence: 0.5*0.4 + 0.5*0.8 = 0.6, and 0.5*0.6 + 0.5*0.2 = 0.4.
    expect(afterTwo.responses.map((r) => r.weight)).toEqual([0.6, 0.4]);
    await (await h.clientFor('senior')).endorse(p.proposal_id, { participant_id: 'senior', confidence: 0.9 });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({
      outcome: 'approved',
      trigger: 'quorum',
      votes_for: 1.55,
      votes_against: 0.4,
      policy: { domain: 'risk', version: 1 },
    });
  });

  it('a weighted threshold above the domain bound is refused at submission', async () => {
    const author = await h.clientFor('author');
    const err = await refusal(
      author.propose({
        domain: 'risk.credit',
        author: 'author',
        payload: { a: 1 },
        quorum: 1,
        quorum_policy: { kind: 'weighted', threshold: 2.5 },
      }),
    );
    expect(err).toMatchObject({ code: 'SCHEMA_VIOLATION', field: 'quorum_policy.threshold' });
  });

  it('a proposal cannot bring its own policy: the one the domain has recorded governs', async () => {
    const author = await h.clientFor('author');
    const forged = { ...v1, version: 1, default_quorum_policy: { kind: 'count' }, quorum_policies: [] };
    const p = await author.propose({ domain: 'risk.credit', author: 'author', payload: { a: 2 }, quorum: 1, policy: forged });
    expect(p.policy).toEqual(v1);
  });

  it('version 2 governs proposals submitted after it; one submitted before is still decided by version 1, and says so', async () => {
    const author = await h.clientFor('author');
    const before = await author.propose({ domain: 'risk.credit', author: 'author', payload: { a: 3 }, quorum: 1 });
    const v2 = { ...v1, version: 2, weight_function: undefined, default_quorum_policy: { kind: 'count' } };
    delete (v2 as Partial<DomainPolicyDocument>).weight_function;
    await set(v2);
    const after = await author.propose({ domain: 'risk.credit', author: 'author', payload: { a: 4 }, quorum: 1 });
    expect(after.policy?.version).toBe(2);
    // Under v2 one vote meets the count quorum of 1; under v1 it does not.
    await (await h.clientFor('junior-a')).endorse(after.proposal_id, { participant_id: 'junior-a', confidence: 0.8 });
    const junior = await (await h.clientFor('junior-a')).endorse(before.proposal_id, { participant_id: 'junior-a', confidence: 0.8 });
    expect(junior.status).toBe('pending');
    const [d2] = await decisions.waitFor(after.proposal_id);
    // 6.1 again: 0.4 x 0.8 x 0.9.
    expect(d2).toMatchObject({ outcome: 'approved', votes_for: 0.288, policy: { domain: 'risk', version: 2 } });
    await (await h.clientFor('senior')).challenge(before.proposal_id, { participant_id: 'senior', confidence: 1 });
    const [d1] = await decisions.waitFor(before.proposal_id);
    expect(d1).toMatchObject({ outcome: 'rejected', votes_for: 0.6, votes_against: 1, policy: { domain: 'risk', version: 1 } });
    // Every version stays readable, so a decision can be explained later.
    const old = await h.admin.call<{ policy: DomainPolicyDocument }>(POLICY_PATTERNS.get, { domain: 'risk', version: d1.policy!.version });
    expect(old.policy).toEqual(v1);
    const explained: Proposal = await author.get(before.proposal_id);
    expect(explained.policy).toEqual(v1);
    expect(decisions.for(before.proposal_id).every((d: DecisionEvent) => d.policy?.version === 1)).toBe(true);
  });

  it('two administrators setting the next version at once: exactly one is recorded, the other gets CONFLICT', async () => {
    const current = (await h.admin.call<{ policy: DomainPolicyDocument }>(POLICY_PATTERNS.get, { domain: 'risk' })).policy;
    const next = current.version + 1;
    const a = { ...current, version: next, description: 'A' };
    const b = { ...current, version: next, description: 'B' };
    const results = await Promise.allSettled([set(a), set(b)]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost.map((r) => (r.reason as ConclaveError).code)).toEqual(['CONFLICT']);
    const recorded = (await h.admin.call<{ policy: DomainPolicyDocument }>(POLICY_PATTERNS.get, { domain: 'risk' })).policy;
    expect(recorded).toEqual((won[0] as PromiseFulfilledResult<{ policy: DomainPolicyDocument }>).value.policy);
  });
});
