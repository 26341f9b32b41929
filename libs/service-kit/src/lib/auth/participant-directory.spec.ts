import fc from 'fast-check';
import { AcpError } from '@conclave/acp-protocol';
import { InMemoryEventLog, type LogEvent } from '@conclave/event-log';
import {
  REGISTRY_COMMAND_TYPES as C,
  foldParticipant,
  isActiveAdministrator,
  participantStream,
  type RegistryCommand,
  type RegistryEvent,
} from '@conclave/registry-protocol';
import { ulid } from 'ulid';
import { loadConfig } from '../config';
import { Readiness } from '../readiness';
import { Reactors } from '../reactor';
import { MemorySnapshots } from '../snapshot-store';
import { AuthenticatedServiceConfig } from './auth-config';
import { ParticipantDirectory } from './participant-directory';

const NOW = '2026-01-01T00:00:00.000Z';
const key = (i: number) => `${String.fromCharCode(65 + i)}${'k'.repeat(42)}`;
const adminId = (i: number) => `admin-${i}`;

/** The reservation bucket's contract (create if absent, or already the holder's), shared by the replicas. */
class MemoryReservations {
  private readonly held = new Map<string, string>();
  async reserve(publicKey: string, holder: string): Promise<boolean> {
    await Promise.resolve();
    const current = this.held.get(publicKey);
    if (current === undefined) this.held.set(publicKey, holder);
    return (current ?? holder) === holder;
  }
}

/** Replicas of the registry on one log, as intake runs them. */
async function replicas(
  count: number,
  log: InMemoryEventLog<LogEvent>,
  reservations = new MemoryReservations(),
): Promise<ParticipantDirectory[]> {
  const config = loadConfig(AuthenticatedServiceConfig, { CONCLAVE_AUTH_MODE: 'required' });
  const directories = Array.from({ length: count }, () => {
    const readiness = new Readiness();
    const reactors = new Reactors(log, () => undefined, config, 'test', new MemorySnapshots(), readiness);
    return new ParticipantDirectory(log, { now: () => new Date(NOW) }, { next: () => ulid() }, config, readiness, reactors, reservations);
  });
  for (const d of directories) await d.onApplicationBootstrap();
  return directories;
}

const command = (type: RegistryCommand['type'], actor: string, data: object) =>
  ({ type, command_id: ulid(), now: NOW, actor, data }) as RegistryCommand;

/** Every participant as the log holds it (not as any replica's cache or list has it). */
async function activeAdministrators(log: InMemoryEventLog<LogEvent>, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => adminId(i));
  const states = await Promise.all(
    ids.map(async (id) => foldParticipant((await log.read(participantStream(id))).events.map((e) => e.event as unknown as RegistryEvent))),
  );
  return ids.filter((_, i) => isActiveAdministrator(states[i]));
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 2));
  if (!check()) throw new Error('the replicas never followed the registrations');
}

/** Given `count` active administrators, followed by every replica. */
async function givenAdministrators(count: number, replicaCount: number) {
  const log = new InMemoryEventLog<LogEvent>();
  const directories = await replicas(replicaCount, log);
  for (let i = 0; i < count; i++) {
    await directories[0].execute(
      command(C.RegisterParticipant, 'bootstrap', { participant_id: adminId(i), roles: ['administrator'], public_key: key(i) }),
    );
  }
  await until(() => directories.every((d) => d.list().length === count));
  return { log, directories, stop: () => Promise.all(directories.map((d) => d.onApplicationShutdown())) };
}

type Removal = { via: number; actor: number; target: number; how: 'drop-role' | 'deactivate' | 'revoke-key' };

const removal = (r: Removal) => {
  const target = adminId(r.target);
  if (r.how === 'drop-role') return command(C.UpdateParticipant, adminId(r.actor), { participant_id: target, roles: ['agent'] });
  if (r.how === 'deactivate') return command(C.DeactivateParticipant, adminId(r.actor), { participant_id: target, reason: 'race' });
  return command(C.RevokeKey, adminId(r.actor), { participant_id: target, key_id: 'k1', reason: 'race' });
};

describe('ParticipantDirectory: registry invariants across participants under concurrent commands', () => {
  it('given two administrators on two replicas, 20 times, when each removes the other at the same instant, then one always remains, a refusal is a CONFLICT, and the races do not all end with both refused', async () => {
    let landed = 0;
    for (let pair = 0; pair < 20; pair++) {
      const { log, directories, stop } = await givenAdministrators(2, 2);
      const results = await Promise.allSettled([
        directories[0].execute(removal({ via: 0, actor: 0, target: 1, how: 'drop-role' })),
        directories[1].execute(removal({ via: 1, actor: 1, target: 0, how: 'deactivate' })),
      ]);
      expect((await activeAdministrators(log, 2)).length).toBeGreaterThanOrEqual(1);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'CONFLICT' });
      landed += results.filter((r) => r.status === 'fulfilled').length;
      await stop();
    }
    expect(landed).toBeGreaterThan(0);
  });

  it('given the only administrator, when it drops its role, then CONFLICT at roles and nothing is appended', async () => {
    const { log, directories, stop } = await givenAdministrators(1, 1);
    const before = (await log.read(participantStream(adminId(0)))).version;
    await expect(directories[0].execute(removal({ via: 0, actor: 0, target: 0, how: 'drop-role' }))).rejects.toMatchObject({
      code: 'CONFLICT',
      field: 'roles',
    });
    expect((await log.read(participantStream(adminId(0)))).version).toBe(before);
    await stop();
  });

  it('for any administrators and any removals among them (role dropped, deactivated, only key revoked) started together on any replicas, at least one active administrator remains in the log, and every refusal is a CONFLICT', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 5 }).chain((count) =>
          fc.record({
            count: fc.constant(count),
            replicaCount: fc.integer({ min: 1, max: 3 }),
            removals: fc.array(
              fc.record({
                via: fc.nat(2),
                actor: fc.nat(count - 1),
                target: fc.nat(count - 1),
                how: fc.constantFrom<Removal['how']>('drop-role', 'deactivate', 'revoke-key'),
              }),
              { minLength: 1, maxLength: 8 },
            ),
          }),
        ),
        async ({ count, replicaCount, removals }) => {
          const { log, directories, stop } = await givenAdministrators(count, replicaCount);
          try {
            const results = await Promise.allSettled(removals.map((r) => directories[r.via % replicaCount].execute(removal(r))));
            for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(AcpError);
            for (const r of results) if (r.status === 'rejected') expect((r.reason as AcpError).code).toBe('CONFLICT');
            expect((await activeAdministrators(log, count)).length).toBeGreaterThanOrEqual(1);
          } finally {
            await stop();
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('for any registrations and rotations adding keys from a small pool, started together on any replicas, no key is ever held by two participants in the log, and every refusal is a CONFLICT that appended nothing', async () => {
    const participant = (i: number) => `agent-${i}`;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.array(fc.record({ via: fc.nat(2), who: fc.nat(3), key: fc.nat(2), rotate: fc.boolean() }), { minLength: 2, maxLength: 8 }),
        async (replicaCount, adds) => {
          const log = new InMemoryEventLog<LogEvent>();
          const directories = await replicas(replicaCount, log);
          try {
            // Agents 0 and 1 exist with keys of their own (k1); agents 2 and 3 are registered by the race, if at all.
            for (const i of [0, 1]) {
              await directories[0].execute(
                command(C.RegisterParticipant, 'admin', { participant_id: participant(i), roles: ['agent'], public_key: key(10 + i) }),
              );
            }
            const results = await Promise.allSettled(
              adds.map((a) => {
                const d = directories[a.via % replicaCount];
                return a.rotate && a.who < 2
                  ? d.execute(command(C.RotateKey, 'admin', { participant_id: participant(a.who), public_key: key(a.key) }))
                  : d.execute(
                      command(C.RegisterParticipant, 'admin', {
                        participant_id: participant(a.who),
                        roles: ['agent'],
                        public_key: key(a.key),
                      }),
                    );
              }),
            );
            for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'CONFLICT' });
            const logged = await Promise.all([0, 1, 2, 3].map(async (i) => (await log.read(participantStream(participant(i)))).events));
            // A refused command appended nothing: the log holds the two seeds and what the accepted ones returned.
            const accepted = results.flatMap((r) => (r.status === 'fulfilled' ? r.value.events : []));
            expect(logged.flat().length).toBe(2 + accepted.length);
            const holders = new Map<string, Set<string>>();
            for (const [i, events] of logged.entries()) {
              const state = foldParticipant(events.map((e) => e.event as unknown as RegistryEvent));
              if (state.status === 'unregistered') continue;
              for (const k of state.participant.keys)
                holders.set(k.public_key, (holders.get(k.public_key) ?? new Set()).add(participant(i)));
            }
            for (const [, who] of holders) expect(who.size).toBe(1);
          } finally {
            await Promise.all(directories.map((d) => d.onApplicationShutdown()));
          }
        },
      ),
      { numRuns: 80 },
    );
  });
});
