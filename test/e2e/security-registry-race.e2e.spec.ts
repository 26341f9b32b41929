import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, generateParticipantKeys } from '@conclave/sdk';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';

type Record_ = { participant: { status: string; roles: string[] } };

/**
 * The registry's invariants across participants, attacked by racing requests, each checked over
 * every participant after each round:
 * - it keeps an active administrator, even when every administrator of a round takes the role
 *   from the next one (dropping it, or deactivating) at the same instant; each removal lands or is
 *   refused (CONFLICT), and the survivors still administer;
 * - one public key, one participant, even when three participants add the same key at once.
 */
describe('security: registry invariants across participants, raced (authentication required)', () => {
  const h = new SecureConclaveHarness();
  const ROUNDS = 8;
  const FRESH_PER_ROUND = 4;
  const everyone = ['admin'];

  beforeAll(async () => {
    await h.start('intake');
  });

  afterAll(() => h.stop());

  /**
   * Each participant as the log has it, read by itself (a participant may read its own record; a
   * deactivated one no longer authenticates, so cannot).
   */
  const activeAdministrators = async (): Promise<string[]> => {
    const states = await Promise.all(
      everyone.map(async (id) => {
        const client = await h.clientFor(id);
        try {
          const { participant } = await client.call<Record_>(REGISTRY_PATTERNS.get, { participant_id: id });
          return { id, active: participant.status === 'active' && participant.roles.includes('administrator') };
        } catch (err) {
          expect((err as { code?: string }).code).toBe('UNAUTHENTICATED');
          return { id, active: false };
        }
      }),
    );
    return states.filter((s) => s.active).map((s) => s.id);
  };

  it(`given ${ROUNDS} rounds of active administrators (${FRESH_PER_ROUND} fresh each round, and the survivors), when each takes the role from the next at the same instant, then every round leaves at least one active administrator, who can still register`, async () => {
    let survivors = ['admin'];
    const outcomes = { removed: 0, refused: 0 };
    for (let round = 1; round <= ROUNDS; round++) {
      const registrar: ConclaveClient = await h.clientFor(survivors[0]);
      const fresh = Array.from({ length: FRESH_PER_ROUND }, (_, i) => `r${round}-admin-${i}`);
      for (const id of fresh) {
        const keys = generateParticipantKeys();
        h.keys.set(id, keys);
        await registrar.call(REGISTRY_PATTERNS.register, { participant_id: id, roles: ['administrator'], public_key: keys.publicKey });
        everyone.push(id);
      }
      // The registry's list follows the log: wait until it holds this round's administrators.
      await eventually(async () => {
        const listed = (await registrar.call<{ participants: { participant_id: string }[] }>(REGISTRY_PATTERNS.list)).participants;
        return fresh.every((id) => listed.some((p) => p.participant_id === id)) ? true : undefined;
      });
      const ring = [...survivors, ...fresh];
      const clients = await Promise.all(ring.map((id) => h.clientFor(id)));

      const results = await Promise.allSettled(
        ring.map((_, i) => {
          const target = ring[(i + 1) % ring.length];
          return i % 2 === 0
            ? clients[i].call(REGISTRY_PATTERNS.update, { participant_id: target, roles: ['agent'] })
            : clients[i].call(REGISTRY_PATTERNS.deactivate, { participant_id: target, reason: 'race' });
        }),
      );
      for (const r of results) {
        if (r.status === 'fulfilled') outcomes.removed++;
        else {
          // A refusal is a typed CONFLICT (the last administrator, or the target kept changing),
          // or the removing administrator had itself just been removed.
          expect(['CONFLICT', 'FORBIDDEN', 'NOT_AUTHORIZED_ROLE', 'UNAUTHENTICATED']).toContain((r.reason as { code?: string }).code);
          outcomes.refused++;
        }
      }

      survivors = await activeAdministrators();
      expect({ round, survivors: survivors.length > 0 }).toEqual({ round, survivors: true });
    }
    // The race was real: removals both landed and were refused over the rounds.
    expect(outcomes.removed).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);

    // A survivor still administers.
    const last = await h.clientFor(survivors[0]);
    const keys = generateParticipantKeys();
    await expect(
      last.call(REGISTRY_PATTERNS.register, { participant_id: 'after-the-race', roles: ['agent'], public_key: keys.publicKey }),
    ).resolves.toBeDefined();
  });

  it('given one fresh public key in each of 10 rounds, when an administrator registers two newcomers with it and mallory rotates her own key to it, all at the same instant, then exactly one of the three holds it and the others get CONFLICT at public_key', async () => {
    const registrar = await h.clientFor((await activeAdministrators())[0]);
    const malloryKeys = generateParticipantKeys();
    h.keys.set('mallory', malloryKeys);
    await registrar.call(REGISTRY_PATTERNS.register, { participant_id: 'mallory', roles: ['agent'], public_key: malloryKeys.publicKey });
    const mallory = await h.clientFor('mallory');
    const holders = async (publicKey: string) => {
      const ids = [...h.keys.keys()];
      const records = await Promise.all(
        ids.map((id) =>
          registrar
            .call<{ participant: { keys: { public_key: string }[] } }>(REGISTRY_PATTERNS.get, { participant_id: id })
            .then((r) => r.participant.keys.some((k) => k.public_key === publicKey))
            .catch(() => false),
        ),
      );
      return ids.filter((_, i) => records[i]);
    };
    for (let round = 1; round <= 10; round++) {
      const shared = generateParticipantKeys().publicKey;
      const ids = [`twin-${round}-a`, `twin-${round}-b`];
      for (const id of ids) h.keys.set(id, generateParticipantKeys());
      const results = await Promise.allSettled([
        ...ids.map((id) => registrar.call(REGISTRY_PATTERNS.register, { participant_id: id, roles: ['agent'], public_key: shared })),
        mallory.call(REGISTRY_PATTERNS.rotateKey, { participant_id: 'mallory', public_key: shared }),
      ]);
      const accepted = results.filter((r) => r.status === 'fulfilled').length;
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'CONFLICT', field: 'public_key' });
      expect({ round, accepted, holders: (await holders(shared)).length }).toEqual({ round, accepted: 1, holders: 1 });
      // Mallory's own rotation, when it took the key, is pending: cancel it for the next round.
      await mallory.call(REGISTRY_PATTERNS.cancelRotation, { participant_id: 'mallory' }).catch(() => undefined);
    }
  });
});
