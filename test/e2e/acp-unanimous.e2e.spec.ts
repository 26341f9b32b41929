import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveHarness, eventually, SecureConclaveHarness } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

const now = () => new Date().toISOString();
const soon = (ms: number) => new Date(Date.now() + ms).toISOString();
const vote = { domain_authority: 0.8, confidence: 0.9, trust_score: 0.9 };

/** RFC 7.3 unanimous quorum with the electorate sent on the wire (authentication off). */
describe('7.3 unanimous quorum, eligible_participants on the wire (intake + resolver + sweeper over NATS)', () => {
  const h = new ConclaveHarness();
  let decisions: DecisionCollector;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'sweeper');
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  const unanimous = (over: Record<string, unknown> = {}) =>
    h.client.propose({
      domain: 'ops.deploy',
      author: 'lead',
      payload: { release: 7 },
      quorum: 1,
      quorum_policy: { kind: 'unanimous' },
      eligible_participants: ['lead', 'ana', 'ben'],
      ...over,
    });

  it('given ana and ben eligible, when both endorse, then approved by QUORUM; the electorate is shown on the proposal', async () => {
    const p = await unanimous();
    expect(p.eligible_participants).toEqual(['lead', 'ana', 'ben']);
    await h.client.endorse(p.proposal_id, { participant_id: 'ana', ...vote });
    expect((await h.client.get(p.proposal_id)).status).toBe('pending');
    await h.client.endorse(p.proposal_id, { participant_id: 'ben', ...vote });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'approved', trigger: 'quorum' });
  });

  it('given ana and ben eligible, when only ana and an outsider respond, then it is not met and expires by TIMEOUT', async () => {
    const p = await unanimous({ expires_at: soon(1_500) });
    await h.client.endorse(p.proposal_id, { participant_id: 'ana', ...vote });
    await h.client.endorse(p.proposal_id, { participant_id: 'outsider', ...vote });
    expect((await h.client.get(p.proposal_id)).status).toBe('pending');
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'approved', trigger: 'timeout' });
  });

  it('given no eligible_participants and no registry (authentication off), then SCHEMA_VIOLATION naming the field', async () => {
    await expect(unanimous({ eligible_participants: undefined })).rejects.toMatchObject({
      code: 'SCHEMA_VIOLATION',
      field: 'eligible_participants',
    });
  });
});

/** RFC 7.3 with authentication: the electorate comes from the registry's grants on the domain. */
describe('7.3 unanimous quorum, eligible participants from the registry (authentication required)', () => {
  const h = new SecureConclaveHarness();
  let decisions: DecisionCollector;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'sweeper');
    await h.seed([
      { participant_id: 'lead', grants: [{ domain: 'ops', domain_authority: 0.5, trust_score: 0.5 }] },
      { participant_id: 'ana', grants: [{ domain: 'ops.deploy', domain_authority: 0.9, trust_score: 0.9 }] },
      { participant_id: 'ben', grants: [{ domain: 'ops', domain_authority: 0.7, trust_score: 0.8 }] },
      // may read and propose in ops.deploy, not respond: not in the electorate
      { participant_id: 'watcher', grants: [{ domain: 'ops.deploy', domain_authority: 0.5, trust_score: 0.5, actions: ['propose'] }] },
      // another domain
      { participant_id: 'fin', grants: [{ domain: 'finance', domain_authority: 0.9, trust_score: 0.9 }] },
      // allowed to respond on ops.deploy, then deactivated below: keeps the grant, not in the electorate
      { participant_id: 'gone', grants: [{ domain: 'ops.deploy', domain_authority: 0.9, trust_score: 0.9 }] },
    ]);
    await h.admin.call(REGISTRY_PATTERNS.deactivate, { participant_id: 'gone', reason: 'left the team' });
    // the registry's list follows the log: wait until it holds every seeded participant
    await eventually(
      async () => {
        const { participants } = await h.admin.call<{ participants: Array<{ participant_id: string; grants: object }> }>(
          REGISTRY_PATTERNS.list,
        );
        return participants.filter((p) => Object.keys(p.grants).length > 0).length >= 6 ? true : undefined;
      },
      10_000,
      'the seeded registry',
    );
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  const propose = async (over: Record<string, unknown> = {}) =>
    (await h.clientFor('lead')).propose({
      domain: 'ops.deploy',
      author: 'lead',
      payload: { release: 8 },
      quorum: 1,
      quorum_policy: { kind: 'unanimous' },
      created_at: now(),
      ...over,
    });

  it('given no list sent, then every active participant allowed to respond on the domain is eligible (author included, never counted)', async () => {
    const p = await propose();
    expect(p.eligible_participants).toEqual(['ana', 'ben', 'lead']);
  });

  it('given a deactivated participant that still holds a grant to respond on the domain, when no list is sent, then it is not eligible', async () => {
    const { participant: gone } = await h.admin.call<{ participant: { status: string; grants: Record<string, unknown> } }>(
      REGISTRY_PATTERNS.get,
      { participant_id: 'gone' },
    );
    expect(gone.status).toBe('deactivated');
    expect(Object.keys(gone.grants)).toEqual(['ops.deploy']);

    const p = await propose();

    expect(p.eligible_participants).not.toContain('gone');
    expect(p.eligible_participants).toEqual(['ana', 'ben', 'lead']);
  });

  it('given the registry electorate, when ana endorses and ben challenges, then approved by QUORUM', async () => {
    const p = await propose();
    await (await h.clientFor('ana')).endorse(p.proposal_id, { participant_id: 'ana', confidence: 0.9 });
    expect((await (await h.clientFor('lead')).get(p.proposal_id)).status).toBe('pending');
    await (await h.clientFor('ben')).challenge(p.proposal_id, { participant_id: 'ben', confidence: 0.5 });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'approved', trigger: 'quorum', votes_for: 0.729, votes_against: 0.28 });
  });

  it('given the registry electorate, when only ana endorses, then the quorum is not met: it expires by TIMEOUT', async () => {
    const p = await propose({ expires_at: soon(1_500) });
    await (await h.clientFor('ana')).endorse(p.proposal_id, { participant_id: 'ana', confidence: 0.9 });
    const [d] = await decisions.waitFor(p.proposal_id);
    expect(d).toMatchObject({ outcome: 'approved', trigger: 'timeout' });
  });

  it('given a list sent by the author, then it is used as sent, not the registry', async () => {
    const p = await propose({ eligible_participants: ['ana'] });
    expect(p.eligible_participants).toEqual(['ana']);
    await (await h.clientFor('ana')).endorse(p.proposal_id, { participant_id: 'ana', confidence: 0.9 });
    expect((await decisions.waitFor(p.proposal_id))[0]).toMatchObject({ outcome: 'approved', trigger: 'quorum' });
  });
});
