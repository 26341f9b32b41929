import { ulid } from 'ulid';
import { ConclaveHarness, eventually, SecureConclaveHarness } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

const vote = { domain_authority: 0.9, confidence: 0.9, trust_score: 0.9 };

/** RFC 11.3 causal lineage: observation -> hypothesis -> proposal -> decision, and acp.v1.lineage. */
describe('11.3 lineage: caused_by on propose, carried into decision events, acp.v1.lineage (intake + resolver over NATS)', () => {
  const h = new ConclaveHarness();
  let decisions: DecisionCollector;

  beforeAll(async () => {
    await h.start('intake', 'resolver');
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  it('given an observation and a hypothesis it motivated, when a proposal names the hypothesis, then its decision event carries the cause and lineage walks the chain both ways', async () => {
    const o = await h.client.propose({
      type: 'observation',
      domain: 'ops.latency',
      author: 'monitor',
      payload: { p99_ms: 900 },
      quorum: 1,
    });
    const hyp = await h.client.propose({
      type: 'hypothesis',
      domain: 'ops.latency',
      author: 'analyst',
      payload: { cause: 'cache' },
      quorum: 1,
      caused_by: [o.proposal_id],
    });
    const p = await h.client.propose({
      domain: 'ops.deploy',
      author: 'fixer',
      payload: { action: 'grow cache' },
      quorum: 1,
      caused_by: [hyp.proposal_id],
    });
    expect(p.caused_by).toEqual([hyp.proposal_id]);

    await h.client.endorse(p.proposal_id, { participant_id: 'reviewer', ...vote });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'approved', caused_by: p.proposal_id, proposal_caused_by: [hyp.proposal_id] });
    expect((await decisions.waitFor(hyp.proposal_id))[0]).toMatchObject({ proposal_caused_by: [o.proposal_id], auto_resolved: true });

    const ofProposal = await h.client.lineage(p.proposal_id);
    expect(ofProposal.entry).toMatchObject({
      proposal_id: p.proposal_id,
      status: 'resolved',
      outcome: 'approved',
      caused_by: [hyp.proposal_id],
    });
    expect(ofProposal.causes.map((n) => [n.proposal_id, n.type, n.distance])).toEqual([
      [hyp.proposal_id, 'hypothesis', 1],
      [o.proposal_id, 'observation', 2],
    ]);
    expect(ofProposal.effects).toEqual([]);

    // effects come from an index that follows the log
    const ofObservation = await eventually(
      async () => {
        const l = await h.client.lineage(o.proposal_id);
        return l.effects.length >= 2 ? l : undefined;
      },
      10_000,
      'the effects of the observation',
    );
    expect(ofObservation.causes).toEqual([]);
    expect(ofObservation.effects.map((n) => [n.proposal_id, n.distance])).toEqual([
      [hyp.proposal_id, 1],
      [p.proposal_id, 2],
    ]);
    const shallow = await h.client.lineage(o.proposal_id, { depth: 1 });
    expect(shallow.effects.map((n) => n.proposal_id)).toEqual([hyp.proposal_id]);
    expect(shallow.truncated).toBe(true);
  });

  it('given a cause that does not exist, then PROPOSAL_NOT_FOUND naming it, and nothing is recorded', async () => {
    const id = ulid();
    const known = await h.client.propose({ type: 'observation', domain: 'ops.latency', author: 'monitor', payload: {}, quorum: 1 });
    await expect(
      h.client.propose({
        proposal_id: id,
        domain: 'ops.deploy',
        author: 'fixer',
        payload: {},
        quorum: 1,
        caused_by: [known.proposal_id, ulid()],
      }),
    ).rejects.toMatchObject({ code: 'PROPOSAL_NOT_FOUND', field: 'caused_by.1' });
    await expect(h.client.get(id)).rejects.toMatchObject({ code: 'PROPOSAL_NOT_FOUND' });
  });

  it('given lineage of an unknown entry, then PROPOSAL_NOT_FOUND', async () => {
    await expect(h.client.lineage(ulid())).rejects.toMatchObject({ code: 'PROPOSAL_NOT_FOUND', field: 'proposal_id' });
  });
});

/** Lineage under authentication: linked entries in domains the reader has no grant on are left out (14.2). */
describe('11.3 lineage with authentication required', () => {
  const h = new SecureConclaveHarness();

  beforeAll(async () => {
    await h.start('intake', 'resolver');
    await h.seed([
      { participant_id: 'sec-monitor', grants: [{ domain: 'security', domain_authority: 0.9, trust_score: 0.9 }] },
      { participant_id: 'ops-agent', grants: [{ domain: 'ops', domain_authority: 0.9, trust_score: 0.9 }] },
    ]);
  });
  afterAll(() => h.stop());

  it('given an ops proposal caused by a security observation, when an ops agent reads its lineage, then the cause is counted as omitted, not shown', async () => {
    const sec = await h.clientFor('sec-monitor');
    const ops = await h.clientFor('ops-agent');
    const o = await sec.propose({
      type: 'observation',
      domain: 'security.alerts',
      author: 'sec-monitor',
      payload: { cve: 'x' },
      quorum: 1,
    });
    const p = await ops.propose({
      domain: 'ops.patch',
      author: 'ops-agent',
      payload: { patch: true },
      quorum: 1,
      caused_by: [o.proposal_id],
    });
    const seenByOps = await ops.lineage(p.proposal_id);
    expect(seenByOps.causes).toEqual([]);
    expect(seenByOps.omitted).toBe(1);
    await expect(ops.lineage(o.proposal_id)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const seenBySec = await eventually(
      async () => {
        const l = await sec.lineage(o.proposal_id);
        return l.omitted > 0 ? l : undefined;
      },
      10_000,
      'the effect indexed',
    );
    expect(seenBySec.effects).toEqual([]);
  });
});
