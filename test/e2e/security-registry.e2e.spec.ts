import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { generateParticipantKeys } from '@conclave/sdk';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';

/**
 * The registry attacked where its invariants span participants (authentication required): an
 * administrator locking every administrator out, and a public key taken by a second participant.
 * Each refusal is asserted with its code and field, and the registry is checked unchanged.
 *
 * Registry: admin (the bootstrap administrator, alone at first), alice and mallory (agents).
 */
describe('security: registry invariants across participants (authentication required)', () => {
  const h = new SecureConclaveHarness();

  beforeAll(async () => {
    await h.start('intake');
    await h.seed([{ participant_id: 'alice' }, { participant_id: 'mallory' }]);
  });

  afterAll(() => h.stop());

  const roles = async (id: string) =>
    (await h.admin.call<{ participant: { roles: string[] } }>(REGISTRY_PATTERNS.get, { participant_id: id })).participant.roles;
  const status = async (id: string) =>
    (await h.admin.call<{ participant: { status: string } }>(REGISTRY_PATTERNS.get, { participant_id: id })).participant.status;

  it('given the only administrator, when it drops its own role or deactivates itself, then CONFLICT each, and it still administers; given a second administrator, then the first may step down', async () => {
    await expect(h.admin.call(REGISTRY_PATTERNS.update, { participant_id: 'admin', roles: ['agent'] })).rejects.toMatchObject({
      code: 'CONFLICT',
      field: 'roles',
    });
    await expect(h.admin.call(REGISTRY_PATTERNS.deactivate, { participant_id: 'admin' })).rejects.toMatchObject({
      code: 'CONFLICT',
      field: 'participant_id',
    });
    expect(await roles('admin')).toContain('administrator');
    expect(await status('admin')).toBe('active');

    // A second administrator, once the registry's list has it, lets the first step down.
    const second = generateParticipantKeys();
    h.keys.set('admin-2', second);
    await h.admin.call(REGISTRY_PATTERNS.register, { participant_id: 'admin-2', roles: ['administrator'], public_key: second.publicKey });
    await eventually(async () =>
      (await h.admin.call<{ participants: { participant_id: string }[] }>(REGISTRY_PATTERNS.list)).participants.some(
        (p) => p.participant_id === 'admin-2',
      )
        ? true
        : undefined,
    );
    await h.admin.call(REGISTRY_PATTERNS.update, { participant_id: 'admin', roles: ['agent'] });
    const admin2 = await h.clientFor('admin-2');
    expect(
      (await admin2.call<{ participant: { roles: string[] } }>(REGISTRY_PATTERNS.get, { participant_id: 'admin' })).participant.roles,
    ).toEqual(['agent']);
    // And admin-2, now the only one, cannot step down in turn.
    await expect(admin2.call(REGISTRY_PATTERNS.update, { participant_id: 'admin-2', roles: ['agent'] })).rejects.toMatchObject({
      code: 'CONFLICT',
      field: 'roles',
    });
  });

  it('given the only administrator (admin-2, after admin stepped down), when it revokes its own only key (by mistake, or a thief holding it), then CONFLICT at key_id, and the key still administers', async () => {
    const admin2 = await h.clientFor('admin-2');
    await expect(
      admin2.call(REGISTRY_PATTERNS.revokeKey, { participant_id: 'admin-2', key_id: 'k1', reason: 'lock them out' }),
    ).rejects.toMatchObject({
      code: 'CONFLICT',
      field: 'key_id',
    });
    const record = (
      await admin2.call<{ participant: { keys: { key_id: string; status: string }[] } }>(REGISTRY_PATTERNS.get, {
        participant_id: 'admin-2',
      })
    ).participant;
    expect(record.keys).toEqual([expect.objectContaining({ key_id: 'k1', status: 'active' })]);
    await expect(
      admin2.call(REGISTRY_PATTERNS.register, {
        participant_id: 'still-administered',
        roles: ['agent'],
        public_key: generateParticipantKeys().publicKey,
      }),
    ).resolves.toBeDefined();
  });

  it("given alice's public key, when mallory rotates her own key to it, or an administrator registers a newcomer with it, then CONFLICT on public_key, and mallory keeps her key", async () => {
    const alicesKey = h.keys.get('alice')!.publicKey;
    const admin = h.clients.get('admin-2') ?? h.admin;
    const mallory = await h.clientFor('mallory');
    const keysOf = async (id: string) =>
      (
        await admin.call<{ participant: { keys: { public_key: string }[]; pending_rotation?: unknown } }>(REGISTRY_PATTERNS.get, {
          participant_id: id,
        })
      ).participant;
    const before = await keysOf('mallory');

    await expect(mallory.call(REGISTRY_PATTERNS.rotateKey, { participant_id: 'mallory', public_key: alicesKey })).rejects.toMatchObject({
      code: 'CONFLICT',
      field: 'public_key',
    });
    await expect(
      admin.call(REGISTRY_PATTERNS.register, { participant_id: 'newcomer', roles: ['agent'], public_key: alicesKey }),
    ).rejects.toMatchObject({ code: 'CONFLICT', field: 'public_key' });

    const after = await keysOf('mallory');
    expect(after.keys).toEqual(before.keys);
    expect(after.pending_rotation).toBeUndefined();
    await expect(admin.call(REGISTRY_PATTERNS.get, { participant_id: 'newcomer' })).rejects.toMatchObject({ code: 'SCHEMA_VIOLATION' });
  });
});
