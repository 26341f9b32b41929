import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, generateParticipantKeys } from '@conclave/sdk';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';

type Record_ = { participant: { status: string; roles: string[] } };

/**
 * The registry keeps an active administrator even when administrators race each other: every
 * administrator of a round takes the role from the next one (dropping it, or deactivating) at the
 * same instant. Each removal either lands or is refused (CONFLICT); the invariant is checked over
 * every participant, from the log, after each round, and the survivors still administer.
 */
describe('security: administrators removing each other at the same instant (authentication required)', () => {
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
});
