import { ulid } from 'ulid';
import { ConclaveHarness } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

const soon = (ms: number) => new Date(Date.now() + ms).toISOString();

/** RFC 9.3 parent/child proposals: children exist (or the parent expires), no self-reference, no cycle. */
describe('9.3 parent/child checks at submission (intake + resolver + sweeper over NATS)', () => {
  const h = new ConclaveHarness();
  let decisions: DecisionCollector;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'sweeper');
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  const propose = (over: Record<string, unknown> = {}) =>
    h.client.propose({ domain: 'strategy', author: 'planner', payload: {}, quorum: 1, ...over });

  it('given a child that does not exist and no expires_at, then the parent is refused with PROPOSAL_NOT_FOUND naming the child, and not recorded', async () => {
    const child = await propose({ domain: 'risk.credit' });
    const parentId = ulid();
    await expect(propose({ proposal_id: parentId, depends_on: [child.proposal_id, ulid()] })).rejects.toMatchObject({
      code: 'PROPOSAL_NOT_FOUND',
      field: 'depends_on.1',
    });
    await expect(h.client.get(parentId)).rejects.toMatchObject({ code: 'PROPOSAL_NOT_FOUND' });
  });

  it('given a child that does not exist but an expires_at, then the parent is accepted and expires instead of staying pending forever', async () => {
    const parent = await propose({ depends_on: [ulid()], expires_at: soon(800) });
    expect(parent.status).toBe('pending');
    const [d] = await decisions.waitFor(parent.proposal_id);
    expect(d).toMatchObject({ outcome: 'expired', trigger: 'timeout' });
  });

  it('given a parent naming itself, then SCHEMA_VIOLATION on depends_on', async () => {
    const id = ulid();
    await expect(propose({ proposal_id: id, depends_on: [id], expires_at: soon(60_000) })).rejects.toMatchObject({
      code: 'SCHEMA_VIOLATION',
      field: 'depends_on',
    });
  });

  it('given a proposal that waits for a future child, when that child names it as its own child, then SCHEMA_VIOLATION: a cycle', async () => {
    const futureId = ulid();
    const first = await propose({ depends_on: [futureId], expires_at: soon(60_000) });
    const refused = await propose({ proposal_id: futureId, depends_on: [first.proposal_id] }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'SCHEMA_VIOLATION', field: 'depends_on' });
    expect((refused as Error).message).toContain(`${futureId} -> ${first.proposal_id} -> ${futureId}`);
    await expect(h.client.get(futureId)).rejects.toMatchObject({ code: 'PROPOSAL_NOT_FOUND' });
  });

  it('given children that exist, when the parent is submitted, then it resolves once they have', async () => {
    const c1 = await propose({ domain: 'risk.credit' });
    const c2 = await propose({ domain: 'ops.deploy' });
    const parent = await propose({ depends_on: [c1.proposal_id, c2.proposal_id] });
    for (const c of [c1, c2])
      await h.client.endorse(c.proposal_id, { participant_id: 'a', domain_authority: 1, confidence: 1, trust_score: 1 });
    expect((await decisions.waitFor(parent.proposal_id))[0]).toMatchObject({ outcome: 'approved', votes_for: 2 });
  });
});
