import { generateKeyPairSync } from 'node:crypto';
import { AUDIT_PATTERNS, AUTH_HEADERS, AuditEntry, REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, ConclaveError, ed25519Signer, generateParticipantKeys, signPayload } from '@conclave/sdk';
import { headers as natsHeaders } from 'nats';
import { ulid } from 'ulid';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';

/**
 * Issue 6, section 8: each attack is refused with its code, against real NATS with intake,
 * resolver and audit running, and each refusal appears in the audit log.
 */
describe('security: authentication, authorization, factors and clearance over NATS, audited', () => {
  const h = new SecureConclaveHarness();
  const now = () => new Date().toISOString();
  let proposalId: string;
  let secretId: string;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'escalation', 'audit');
    await h.seed([
      { participant_id: 'alice', clearance: 'confidential', grants: [{ domain: 'risk', domain_authority: 0.9, trust_score: 0.8 }] },
      { participant_id: 'bob', clearance: 'confidential', grants: [{ domain: 'risk.credit', domain_authority: 0.7, trust_score: 0.6 }] },
      { participant_id: 'carol', grants: [{ domain: 'risk', domain_authority: 0.5, trust_score: 0.5 }] },
      { participant_id: 'ops-only', grants: [{ domain: 'ops', domain_authority: 0.9, trust_score: 0.9 }] },
      { participant_id: 'spy', clearance: 'public', grants: [{ domain: 'risk', domain_authority: 0.5, trust_score: 0.5 }] },
      { participant_id: 'officer', roles: ['agent', 'human-resolver'], grants: [{ domain: 'risk', domain_authority: 1, trust_score: 1 }] },
    ]);
    const alice = await h.clientFor('alice');
    proposalId = (await alice.propose({ domain: 'risk.credit', author: 'alice', payload: { loan: 1 }, quorum: 3, created_at: now() }))
      .proposal_id;
    secretId = (
      await alice.propose({
        domain: 'risk.credit',
        author: 'alice',
        payload: { secret: 'merger' },
        quorum: 3,
        created_at: now(),
        classification: 'confidential',
      })
    ).proposal_id;
  });
  afterAll(() => h.stop());

  /** Audit entries already matched to a refusal: each refusal must find one of its own. */
  const claimed = new Set<number>();

  /**
   * The rejection entry of the audit log for this proposal and action, once the audit service has
   * it, not matched to an earlier refusal: two alike refusals need two entries.
   */
  async function audited(proposal: string | null, action: string, code: string, actor?: string): Promise<AuditEntry> {
    return eventually(
      async () => {
        const { entries } = await h.admin.call<{ entries: AuditEntry[] }>(AUDIT_PATTERNS.query, {
          outcome: 'rejected',
          action,
          limit: 1000,
        });
        const entry = entries.find(
          (e) =>
            !claimed.has(e.seq) &&
            e.error?.code === code &&
            (proposal === null || e.proposal_id === proposal) &&
            (actor === undefined || e.actor === actor),
        );
        if (entry) claimed.add(entry.seq);
        return entry;
      },
      10_000,
      `audit entry ${action} ${code}`,
    );
  }

  const refused = async (p: Promise<unknown>, code: string, field?: string) => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConclaveError);
    expect(err).toMatchObject(field ? { code, field } : { code });
    return err as ConclaveError;
  };

  it('forged signature: UNAUTHENTICATED, audited', async () => {
    const forger = await ConclaveClient.connect({
      nc: h.nc,
      prefix: h.prefix,
      sign: () => ({
        [AUTH_HEADERS.participant]: 'bob',
        [AUTH_HEADERS.timestamp]: now(),
        [AUTH_HEADERS.nonce]: ulid(),
        [AUTH_HEADERS.signature]: Buffer.alloc(64, 7).toString('base64'),
      }),
    });
    await refused(forger.endorse(proposalId, { participant_id: 'bob', confidence: 0.9 }), 'UNAUTHENTICATED');
    const entry = await audited(proposalId, 'rejected:respond', 'UNAUTHENTICATED', 'bob');
    expect(entry.error?.message).toMatch(/does not verify/);
  });

  it("wrong key (signed by someone else's private key): UNAUTHENTICATED, audited", async () => {
    const mallory = await h.clientFor('bob', h.keys.get('alice')!.privateKeyPem);
    await refused(mallory.challenge(proposalId, { participant_id: 'bob', confidence: 0.9 }), 'UNAUTHENTICATED');
    await audited(proposalId, 'rejected:respond', 'UNAUTHENTICATED', 'bob');
  });

  it('revoked key: UNAUTHENTICATED, audited; the rotated-in key works', async () => {
    const carol = await h.clientFor('carol');
    await h.admin.call(REGISTRY_PATTERNS.revokeKey, { participant_id: 'carol', key_id: 'k1', reason: 'laptop stolen' });
    const err = await refused(carol.endorse(proposalId, { participant_id: 'carol', confidence: 0.5 }), 'UNAUTHENTICATED');
    expect(err.message).toMatch(/revoked/);
    await audited(proposalId, 'rejected:respond', 'UNAUTHENTICATED', 'carol');
    const fresh = generateParticipantKeys();
    await h.admin.call(REGISTRY_PATTERNS.rotateKey, { participant_id: 'carol', public_key: fresh.publicKey });
    const again = await h.clientFor('carol', fresh.privateKeyPem);
    expect((await again.get(proposalId)).proposal_id).toBe(proposalId);
  });

  it('replayed nonce: the captured request is refused the second time, UNAUTHENTICATED, audited', async () => {
    const body = new TextEncoder().encode(JSON.stringify({ proposal_id: proposalId }));
    const subject = `${h.prefix}.v1.get`;
    const signed = ed25519Signer('alice', h.keys.get('alice')!.privateKeyPem)(subject, body);
    const hdrs = natsHeaders();
    for (const [k, v] of Object.entries(signed)) hdrs.set(k, v);
    const first = JSON.parse(new TextDecoder().decode((await h.nc.request(subject, body, { headers: hdrs, timeout: 5000 })).data));
    expect(first.ok).toBe(true);
    const second = JSON.parse(new TextDecoder().decode((await h.nc.request(subject, body, { headers: hdrs, timeout: 5000 })).data));
    expect(second).toMatchObject({ ok: false, error: { code: 'UNAUTHENTICATED', message: expect.stringMatching(/replayed/) } });
    await audited(proposalId, 'rejected:get', 'UNAUTHENTICATED', 'alice');
  });

  it('stale timestamp: UNAUTHENTICATED, audited', async () => {
    const late = await ConclaveClient.connect({
      nc: h.nc,
      prefix: h.prefix,
      signer: ed25519Signer('alice', h.keys.get('alice')!.privateKeyPem, { now: () => new Date(Date.now() - 5 * 60_000) }),
    });
    const err = await refused(late.escalate(proposalId, { reason: 'late', requested_by: 'alice' }), 'UNAUTHENTICATED');
    expect(err.message).toMatch(/stale/);
    await audited(proposalId, 'rejected:escalate', 'UNAUTHENTICATED', 'alice');
  });

  it('responding in a domain without a grant (14.2): FORBIDDEN, audited', async () => {
    const outsider = await h.clientFor('ops-only');
    await refused(outsider.endorse(proposalId, { participant_id: 'ops-only', confidence: 0.9 }), 'FORBIDDEN', 'domain');
    await audited(proposalId, 'rejected:respond', 'FORBIDDEN', 'ops-only');
  });

  it('acting as another participant: FORBIDDEN naming the field, audited', async () => {
    const bob = await h.clientFor('bob');
    await refused(bob.endorse(proposalId, { participant_id: 'alice', confidence: 0.9 }), 'FORBIDDEN', 'participant_id');
    await audited(proposalId, 'rejected:respond', 'FORBIDDEN', 'bob');
  });

  it('a response declaring inflated authority: FORBIDDEN on domain_authority, audited; the registry value is stamped otherwise', async () => {
    const bob = await h.clientFor('bob');
    await refused(
      bob.endorse(proposalId, { participant_id: 'bob', confidence: 0.9, domain_authority: 1, trust_score: 0.6 }),
      'FORBIDDEN',
      'domain_authority',
    );
    await audited(proposalId, 'rejected:respond', 'FORBIDDEN', 'bob');
    const reply = await bob.call<{
      factors: unknown;
      proposal: { responses: Array<{ participant_id: string; domain_authority: number; trust_score: number }> };
    }>('v1.respond', {
      schema_version: '1.0',
      proposal_id: proposalId,
      participant_id: 'bob',
      response_type: 'endorse',
      confidence: 0.9,
      reason: null,
    });
    expect(reply.factors).toEqual({ domain_authority: 0.7, trust_score: 0.6, source: 'registry' });
    expect(reply.proposal.responses.find((r) => r.participant_id === 'bob')).toMatchObject({ domain_authority: 0.7, trust_score: 0.6 });
  });

  it("given bob with a grant on risk.credit, when he escalates alice's risk.credit proposal in his own name (10.1 item 2), then it is escalated with reason manual and requested_by bob", async () => {
    const alice = await h.clientFor('alice');
    const bob = await h.clientFor('bob');
    const p = await alice.propose({ domain: 'risk.credit', author: 'alice', payload: { loan: 2 }, quorum: 3, created_at: now() });

    const escalated = await bob.escalate(p.proposal_id, { reason: 'above my limit', requested_by: 'bob' });

    const why = { reason: 'manual', requested_by: 'bob', note: 'above my limit', escalated_at: expect.any(String) };
    expect(escalated).toMatchObject({ status: 'escalated', resolution: { outcome: 'escalated', trigger: 'manual', escalation: why } });
    expect(await alice.get(p.proposal_id)).toMatchObject({ status: 'escalated', resolution: { escalation: why } });
  });

  it('escalating a proposal of a domain without a grant (10.1 item 2, 14.2): FORBIDDEN, audited; the proposal stays pending', async () => {
    const outsider = await h.clientFor('ops-only');
    await refused(outsider.escalate(proposalId, { reason: 'let a human decide', requested_by: 'ops-only' }), 'FORBIDDEN', 'domain');
    await audited(proposalId, 'rejected:escalate', 'FORBIDDEN', 'ops-only');
    expect((await (await h.clientFor('alice')).get(proposalId)).status).toBe('pending');
  });

  it("escalating in another participant's name: FORBIDDEN naming requested_by, audited; the proposal stays pending", async () => {
    const bob = await h.clientFor('bob');
    await refused(bob.escalate(proposalId, { reason: 'alice said so', requested_by: 'alice' }), 'FORBIDDEN', 'requested_by');
    await audited(proposalId, 'rejected:escalate', 'FORBIDDEN', 'bob');
    expect((await bob.get(proposalId)).status).toBe('pending');
  });

  it('an agent resolving an escalation (10.2 needs the human-resolver role): FORBIDDEN, audited; a human resolver resolves it', async () => {
    const alice = await h.clientFor('alice');
    const officer = await h.clientFor('officer');
    const p = await alice.propose({ domain: 'risk', author: 'alice', payload: { limit: 2 }, quorum: 3, created_at: now() });
    expect((await alice.escalate(p.proposal_id, { reason: 'needs a human', requested_by: 'alice' })).status).toBe('escalated');
    await eventually(async () => ((await officer.escalations()).some((e) => e.proposal_id === p.proposal_id) ? true : undefined));

    await refused(
      alice.resolve(p.proposal_id, { outcome: 'approved', resolved_by: 'alice', note: 'I approve my own' }),
      'FORBIDDEN',
      'resolved_by',
    );
    await audited(p.proposal_id, 'rejected:resolve', 'FORBIDDEN', 'alice');
    await refused(
      alice.resolve(p.proposal_id, { outcome: 'approved', resolved_by: 'officer', note: 'in his name' }),
      'FORBIDDEN',
      'resolved_by',
    );
    await audited(p.proposal_id, 'rejected:resolve', 'FORBIDDEN', 'alice');
    expect((await officer.escalation(p.proposal_id)).escalation.status).toBe('open');

    const resolved = await officer.resolve(p.proposal_id, { outcome: 'rejected', resolved_by: 'officer', note: 'too risky' });
    expect(resolved.resolution).toMatchObject({ outcome: 'rejected', trigger: 'manual', resolved_by: 'officer' });
  });

  it('a reader without clearance (14.5): the payload is withheld, the denial audited as FORBIDDEN', async () => {
    const spy = await h.clientFor('spy');
    const seen = (await spy.get(secretId)) as unknown as Record<string, unknown>;
    expect(seen).toMatchObject({ proposal_id: secretId, payload: {}, payload_withheld: true, classification: 'confidential' });
    const listed = (await spy.list({ domain: 'risk.credit' })).proposals as unknown as Array<Record<string, unknown>>;
    expect(listed.find((p) => p['proposal_id'] === secretId)).toMatchObject({ payload: {}, payload_withheld: true });
    expect(listed.find((p) => p['proposal_id'] === proposalId)).toMatchObject({ payload: { loan: 1 } });
    await audited(secretId, 'rejected:get', 'FORBIDDEN', 'spy');
    await audited(secretId, 'rejected:list', 'FORBIDDEN', 'spy');
    // and cannot respond to what it cannot read
    await refused(spy.endorse(secretId, { participant_id: 'spy', confidence: 0.5 }), 'FORBIDDEN', 'proposal_id');
    await audited(secretId, 'rejected:respond', 'FORBIDDEN', 'spy');
    // a cleared reader sees it
    expect((await (await h.clientFor('bob')).get(secretId)).payload).toEqual({ secret: 'merger' });
  });

  it('14.3 a payload signature is verified against the author and kept with the payload hash; a bad one is refused', async () => {
    const alice = await h.clientFor('alice');
    const payload = { deal: 'x', amount: 5 };
    const signature = signPayload(payload, h.keys.get('alice')!.privateKeyPem);
    const p = (await alice.propose({
      domain: 'risk',
      author: 'alice',
      payload,
      quorum: 1,
      created_at: now(),
      payload_signature: signature,
    })) as unknown as Record<string, unknown>;
    expect(p).toMatchObject({
      payload_signature: signature,
      payload_signature_key_id: 'k1',
      payload_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const other = generateKeyPairSync('ed25519').privateKey;
    await refused(
      alice.propose({
        domain: 'risk',
        author: 'alice',
        payload,
        quorum: 1,
        created_at: now(),
        payload_signature: signPayload(payload, other),
      }),
      'UNAUTHENTICATED',
      'payload_signature',
    );
    const entry = await audited(null, 'rejected:propose', 'UNAUTHENTICATED', 'alice');
    expect(entry.error?.field).toBe('payload_signature');
  });

  it('a proposal in a domain the author has no grant for: FORBIDDEN, audited', async () => {
    const bob = await h.clientFor('bob');
    await refused(bob.propose({ domain: 'risk.market', author: 'bob', payload: {}, quorum: 1, created_at: now() }), 'FORBIDDEN', 'domain');
    await audited(null, 'rejected:propose', 'FORBIDDEN', 'bob');
  });

  it('registry commands need the administrator role', async () => {
    const bob = await h.clientFor('bob');
    await refused(
      bob.call(REGISTRY_PATTERNS.grant, { participant_id: 'bob', domain: 'ops', domain_authority: 1, trust_score: 1 }),
      'FORBIDDEN',
    );
    await audited(null, 'rejected:participants.grant', 'FORBIDDEN', 'bob');
  });
});
