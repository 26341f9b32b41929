import { AUDIT_PATTERNS, AuditEntry, REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, generateParticipantKeys } from '@conclave/sdk';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';

const now = () => new Date().toISOString();

/** The code of a refused call (the call must be refused). */
async function refusal(call: Promise<unknown>): Promise<{ code: string; message: string; field?: string }> {
  try {
    await call;
  } catch (err) {
    return err as { code: string; message: string; field?: string };
  }
  throw new Error('expected the call to be refused');
}

type ParticipantView = {
  keys: Array<{ key_id: string; status: string }>;
  pending_rotation?: { key_id: string; requested_by: string; effective_at: string };
};

/**
 * A stolen key tries to rotate its owner's key away, with authentication required, against real
 * NATS: the thief holds alice's private key (k1) and asks to replace it with a key of his own.
 */
describe('security: a stolen key rotating away its owner', () => {
  const h = new SecureConclaveHarness();
  const proposeAs = (client: ConclaveClient) =>
    client.propose({ domain: 'risk', author: 'alice', payload: { still: 'mine' }, quorum: 5, created_at: now() });

  async function auditEntries(filter: Record<string, unknown>): Promise<AuditEntry[]> {
    return (await h.admin.call<{ entries: AuditEntry[] }>(AUDIT_PATTERNS.query, { ...filter, limit: 100 })).entries;
  }

  beforeAll(async () => {
    await h.start('intake', 'audit');
    await h.seed([{ participant_id: 'alice', grants: [{ domain: 'risk', domain_authority: 0.9, trust_score: 0.9 }] }]);
  });
  afterAll(() => h.stop());

  it("given the thief signs with alice's stolen key, when he rotates her key to his own, then the rotation is only pending: alice keeps working, his key is refused, alice sees it, cancels it, and both steps are on the audit chain", async () => {
    const alice = await h.clientFor('alice');
    const stolen = h.keys.get('alice')!.privateKeyPem;
    const thief = await h.clientFor('alice', stolen);
    const thiefKeys = generateParticipantKeys();

    // When: the thief asks to rotate.
    const requested = await thief.call<{ participant: ParticipantView; events: string[] }>(REGISTRY_PATTERNS.rotateKey, {
      participant_id: 'alice',
      public_key: thiefKeys.publicKey,
    });

    // Then: pending for the cool-down (24 h by default), not in force.
    expect(requested.events).toEqual(['KeyRotationRequested']);
    expect(requested.participant.pending_rotation).toMatchObject({ key_id: 'k2', requested_by: 'alice' });
    expect(Date.parse(requested.participant.pending_rotation!.effective_at) - Date.now()).toBeGreaterThan(23 * 3_600_000);
    expect(requested.participant.keys.map((k) => [k.key_id, k.status])).toEqual([
      ['k1', 'active'],
      ['k2', 'pending'],
    ]);
    // The owner still works.
    expect((await proposeAs(alice)).author).toBe('alice');
    // The thief's new key does not.
    const withThiefsKey = await h.clientFor('alice', thiefKeys.privateKeyPem);
    expect(await refusal(proposeAs(withThiefsKey))).toMatchObject({ code: 'UNAUTHENTICATED', message: expect.stringMatching(/pending/) });
    // A second request cannot stack another rotation behind the first.
    expect(
      await refusal(thief.call(REGISTRY_PATTERNS.rotateKey, { participant_id: 'alice', public_key: generateParticipantKeys().publicKey })),
    ).toMatchObject({ code: 'CONFLICT' });

    // Alice sees the pending rotation on her own record, and cancels it with her key.
    const mine = await alice.call<{ participant: ParticipantView }>(REGISTRY_PATTERNS.get, { participant_id: 'alice' });
    expect(mine.participant.pending_rotation?.key_id).toBe('k2');
    const cancelled = await alice.call<{ participant: ParticipantView; events: string[] }>(REGISTRY_PATTERNS.cancelRotation, {
      participant_id: 'alice',
      reason: 'not requested by me',
    });
    expect(cancelled.events).toEqual(['KeyRotationCancelled']);
    expect(cancelled.participant.pending_rotation).toBeUndefined();
    expect(await refusal(proposeAs(withThiefsKey))).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await proposeAs(alice)).author).toBe('alice');

    // Audited: the request and the cancellation, each with its actor.
    const requestedEntry = await eventually(
      async () => (await auditEntries({ action: 'KeyRotationRequested' }))[0],
      10_000,
      'the rotation request on the audit chain',
    );
    expect(requestedEntry).toMatchObject({ actor: 'alice', outcome: 'recorded' });
    await eventually(
      async () => (await auditEntries({ action: 'KeyRotationCancelled' }))[0],
      10_000,
      'the cancellation on the audit chain',
    );
  });

  it('given the key is known stolen, when an administrator rotates it to a key alice gives out of band, then the stolen key stops at once', async () => {
    const stolen = await h.clientFor('alice', h.keys.get('alice')!.privateKeyPem);
    const fresh = generateParticipantKeys();
    const rotated = await h.admin.call<{ events: string[] }>(REGISTRY_PATTERNS.rotateKey, {
      participant_id: 'alice',
      public_key: fresh.publicKey,
    });
    expect(rotated.events).toEqual(['KeyRotated']);
    expect(await refusal(proposeAs(stolen))).toMatchObject({ code: 'UNAUTHENTICATED', message: expect.stringMatching(/rotated out/) });
    expect(
      await refusal(stolen.call(REGISTRY_PATTERNS.rotateKey, { participant_id: 'alice', public_key: generateParticipantKeys().publicKey })),
    ).toMatchObject({
      code: 'UNAUTHENTICATED',
    });
    const owner = await h.clientFor('alice', fresh.privateKeyPem);
    expect((await proposeAs(owner)).author).toBe('alice');
  });
});

describe('security: a rotation of her own key takes effect after the cool-down', () => {
  const h = new SecureConclaveHarness({ CONCLAVE_KEY_ROTATION_COOLDOWN_MS: '1500' });
  beforeAll(async () => {
    await h.start('intake');
    await h.seed([{ participant_id: 'alice', grants: [{ domain: 'risk', domain_authority: 0.9, trust_score: 0.9 }] }]);
  });
  afterAll(() => h.stop());

  it('given alice rotates her own key and nobody cancels, then after the cool-down the new key works and the old one never again', async () => {
    const old = await h.clientFor('alice');
    const next = generateParticipantKeys();
    const withNext = await h.clientFor('alice', next.privateKeyPem);
    const propose = (c: ConclaveClient) => c.propose({ domain: 'risk', author: 'alice', payload: {}, quorum: 5, created_at: now() });

    const requested = await old.call<{ participant: ParticipantView }>(REGISTRY_PATTERNS.rotateKey, {
      participant_id: 'alice',
      public_key: next.publicKey,
    });
    expect(requested.participant.pending_rotation?.key_id).toBe('k2');

    await eventually(
      async () =>
        await propose(withNext).then(
          () => true,
          () => undefined,
        ),
      10_000,
      'the new key in force',
    );
    expect(await refusal(propose(old))).toMatchObject({ code: 'UNAUTHENTICATED', message: expect.stringMatching(/rotated out/) });
    const after = await withNext.call<{ participant: ParticipantView }>(REGISTRY_PATTERNS.get, { participant_id: 'alice' });
    expect(after.participant.pending_rotation).toBeUndefined();
    expect(after.participant.keys.map((k) => [k.key_id, k.status])).toEqual([
      ['k1', 'retired'],
      ['k2', 'active'],
    ]);
  });
});
