import fc from 'fast-check';
import { activeKeys } from './authorization';
import { REGISTRY_COMMAND_TYPES as C, REGISTRY_EVENT_TYPES as E } from './contracts';
import type { RegistryCommand } from './participant.commands';
import { decideRegistry } from './participant.decider';
import type { RegistryEvent } from './participant.events';
import { foldParticipant } from './participant.state';
import type { ParticipantRecord, ParticipantState } from './participant.state';

const KEY_1 = 'A'.repeat(43);
const KEY_2 = 'B'.repeat(43);
const KEY_3 = 'C'.repeat(43);
const T0 = '2026-01-01T00:00:00.000Z';
const DUE = '2026-01-02T00:00:00.000Z';
let n = 0;

type Step = { at: string; actor?: string; command: Pick<RegistryCommand, 'type' | 'data'> };

/** Decides each command at its own time, folding as it goes: the registry as intake runs it. */
function history(...steps: Step[]) {
  const events: RegistryEvent[] = [];
  for (const s of steps) {
    const meta = { command_id: `01J00000000000000000000${String(100 + ++n).slice(-3)}`, now: s.at, actor: s.actor ?? 'agent-a' };
    events.push(...decideRegistry({ ...meta, ...s.command } as RegistryCommand, foldParticipant(events)));
  }
  return { events, state: foldParticipant(events) };
}

const record = (state: ParticipantState): ParticipantRecord => {
  if (state.status === 'unregistered') throw new Error('unregistered');
  return state.participant;
};
const active = (state: ParticipantState, at: string) => activeKeys(record(state), at).map((k) => k.key_id);

const register = {
  at: T0,
  actor: 'admin',
  command: { type: C.RegisterParticipant, data: { participant_id: 'agent-a', roles: ['agent'], public_key: KEY_1 } },
};
const ownRotation = (at = T0, key = KEY_2) => ({
  at,
  command: { type: C.RotateKey, data: { participant_id: 'agent-a', public_key: key, effective_at: DUE } },
});
const cancel = (at: string, actor = 'agent-a') => ({
  at,
  actor,
  command: { type: C.CancelKeyRotation, data: { participant_id: 'agent-a', reason: 'not me' } },
});

describe('key rotation with a cool-down (a stolen key cannot lock its owner out)', () => {
  it('given a rotation of her own key, then it is pending: k1 keeps working, k2 does not, until effective_at; then k2 alone', () => {
    const { events, state } = history(register, ownRotation());
    expect(events.map((e) => e.type)).toEqual([E.ParticipantRegistered, E.KeyRotationRequested]);
    expect(record(state).pending_rotation).toEqual({
      key_id: 'k2',
      requested_at: T0,
      requested_by: 'agent-a',
      effective_at: DUE,
      retires_key_ids: ['k1'],
    });
    expect(active(state, '2026-01-01T23:59:59.999Z')).toEqual(['k1']);
    expect(active(state, DUE)).toEqual(['k2']);
  });

  it('given a pending rotation, when the current key cancels it before effective_at, then k2 never works and k1 always does', () => {
    const { events, state } = history(register, ownRotation(), cancel('2026-01-01T12:00:00.000Z'));
    expect(events.at(-1)).toMatchObject({ type: E.KeyRotationCancelled, data: { key_id: 'k2', reason: 'not me' } });
    expect(record(state).pending_rotation).toBeUndefined();
    expect(active(state, '2027-01-01T00:00:00.000Z')).toEqual(['k1']);
    expect(record(state).keys.find((k) => k.key_id === 'k2')?.status).toBe('revoked');
  });

  it('given a pending rotation, then a second one is CONFLICT until the first is cancelled; a cancel after effective_at is CONFLICT', () => {
    expect(() => history(register, ownRotation(), ownRotation('2026-01-01T01:00:00.000Z', KEY_3))).toThrow(
      expect.objectContaining({ code: 'CONFLICT' }),
    );
    expect(() => history(register, ownRotation(), cancel(DUE))).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
  });

  it('given a pending rotation, when an administrator rotates at once, then the pending one is cancelled and only the new key works', () => {
    const { events, state } = history(register, ownRotation(), {
      at: '2026-01-01T06:00:00.000Z',
      actor: 'admin',
      command: { type: C.RotateKey, data: { participant_id: 'agent-a', public_key: KEY_3 } },
    });
    expect(events.slice(-2).map((e) => e.type)).toEqual([E.KeyRotationCancelled, E.KeyRotated]);
    expect(active(state, '2026-01-01T06:00:00.000Z')).toEqual(['k3']);
    expect(active(state, '2027-01-01T00:00:00.000Z')).toEqual(['k3']);
  });

  it('given effective_at not after now, then SCHEMA_VIOLATION (field effective_at)', () => {
    expect(() =>
      history(register, {
        at: DUE,
        command: { type: C.RotateKey, data: { participant_id: 'agent-a', public_key: KEY_2, effective_at: T0 } },
      }),
    ).toThrow(expect.objectContaining({ code: 'SCHEMA_VIOLATION', field: 'effective_at' }));
  });

  it('given a rotation that took effect, then later events fold on the settled keys (a new rotation retires k2, not k1)', () => {
    const { state } = history(register, ownRotation(), {
      at: '2026-01-03T00:00:00.000Z',
      actor: 'admin',
      command: { type: C.RotateKey, data: { participant_id: 'agent-a', public_key: KEY_3 } },
    });
    expect(record(state).keys.map((k) => [k.key_id, k.status])).toEqual([
      ['k1', 'retired'],
      ['k2', 'retired'],
      ['k3', 'active'],
    ]);
  });

  it('property: at any instant exactly one key authenticates, the old one before effective_at (or always, once cancelled), the new one from it on', () => {
    const instant = fc.integer({ min: Date.parse(T0), max: Date.parse('2026-01-03T00:00:00.000Z') }).map((t) => new Date(t).toISOString());
    fc.assert(
      fc.property(instant, fc.option(instant, { nil: undefined }), (at, cancelledAt) => {
        const steps: Step[] = [register, ownRotation()];
        const cancels = cancelledAt !== undefined && Date.parse(cancelledAt) < Date.parse(DUE);
        if (cancels) steps.push(cancel(cancelledAt));
        const { state } = history(...steps);
        // Asked before the cancel was sent, the record does not know of it yet: ask at or after it.
        const when = cancels && Date.parse(at) < Date.parse(cancelledAt) ? cancelledAt : at;
        const expected = !cancels && Date.parse(when) >= Date.parse(DUE) ? ['k2'] : ['k1'];
        expect(active(state, when)).toEqual(expected);
      }),
    );
  });
});
