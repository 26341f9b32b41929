import { AcpError } from '@conclave/acp-protocol';
import { REGISTRY_COMMAND_TYPES as C, REGISTRY_EVENT_TYPES as E, participantStream } from './contracts';
import type { RegistryCommand } from './participant.commands';
import { administratorLostBy, decideRegistry, keysAddedBy } from './participant.decider';
import type { RegistryEvent } from './participant.events';
import { foldParticipant } from './participant.state';
import type { ParticipantState } from './participant.state';

const KEY_1 = 'A'.repeat(43);
const KEY_2 = 'B'.repeat(43);
let n = 0;
const meta = () => ({ command_id: `01J00000000000000000000${String(100 + ++n).slice(-3)}`, now: '2026-01-01T00:00:00Z', actor: 'admin' });

function given(...commands: Array<Pick<RegistryCommand, 'type' | 'data'>>): { events: RegistryEvent[]; state: ParticipantState } {
  const events: RegistryEvent[] = [];
  for (const c of commands) events.push(...decideRegistry({ ...meta(), ...c } as RegistryCommand, foldParticipant(events)));
  return { events, state: foldParticipant(events) };
}
const when = (state: ParticipantState, c: Pick<RegistryCommand, 'type' | 'data'>) =>
  decideRegistry({ ...meta(), ...c } as RegistryCommand, state);
const register = { type: C.RegisterParticipant, data: { participant_id: 'agent-a', roles: ['agent' as const], public_key: KEY_1 } };

describe('participant registry decider', () => {
  it('registers a participant with key k1, default clearance internal and no grants', () => {
    const { events, state } = given(register);
    expect(events.map((e) => e.type)).toEqual([E.ParticipantRegistered]);
    expect(state).toMatchObject({
      status: 'active',
      participant: { participant_id: 'agent-a', roles: ['agent'], clearance: 'internal', grants: {} },
    });
    expect(state.status === 'active' && state.participant.keys).toEqual([
      { key_id: 'k1', public_key: KEY_1, status: 'active', added_at: '2026-01-01T00:00:00Z', ended_at: null },
    ]);
  });

  it('refuses a second registration, bad ids, roles and keys', () => {
    const { state } = given(register);
    expect(() => when(state, register)).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
    const bad = (data: object, field: string) =>
      expect(() => when({ status: 'unregistered' }, { type: C.RegisterParticipant, data: { ...register.data, ...data } } as never)).toThrow(
        expect.objectContaining({ code: 'SCHEMA_VIOLATION', field }),
      );
    bad({ participant_id: 'has space' }, 'participant_id');
    bad({ roles: ['king'] }, 'roles');
    bad({ roles: [] }, 'roles');
    bad({ public_key: 'short' }, 'public_key');
    bad({ clearance: 'secret' }, 'clearance');
  });

  it('rotation adds k2 and retires k1 at once; a reused key is refused', () => {
    const { state } = given(register, { type: C.RotateKey, data: { participant_id: 'agent-a', public_key: KEY_2 } });
    expect(state.status === 'active' && state.participant.keys.map((k) => [k.key_id, k.status])).toEqual([
      ['k1', 'retired'],
      ['k2', 'active'],
    ]);
    expect(() => when(state, { type: C.RotateKey, data: { participant_id: 'agent-a', public_key: KEY_1 } })).toThrow(
      expect.objectContaining({ code: 'CONFLICT', field: 'public_key' }),
    );
  });

  it('revokes a key (idempotent) and names an unknown one', () => {
    const { state } = given(register, { type: C.RevokeKey, data: { participant_id: 'agent-a', key_id: 'k1', reason: 'leaked' } });
    expect(state.status === 'active' && state.participant.keys[0]).toMatchObject({ status: 'revoked', ended_at: '2026-01-01T00:00:00Z' });
    expect(when(state, { type: C.RevokeKey, data: { participant_id: 'agent-a', key_id: 'k1' } })).toEqual([]);
    expect(() => when(state, { type: C.RevokeKey, data: { participant_id: 'agent-a', key_id: 'k9' } })).toThrow(
      expect.objectContaining({ field: 'key_id' }),
    );
  });

  it('grants a domain with all actions by default, replaces it, and revokes it where it was given', () => {
    const grant = { type: C.GrantDomain, data: { participant_id: 'agent-a', domain: 'risk', domain_authority: 0.9, trust_score: 0.8 } };
    const { state } = given(register, grant, {
      type: C.GrantDomain,
      data: { ...grant.data, actions: ['respond' as const], trust_score: 0.5 },
    });
    expect(state.status === 'active' && state.participant.grants['risk']).toMatchObject({
      actions: ['respond'],
      domain_authority: 0.9,
      trust_score: 0.5,
      granted_by: 'admin',
    });
    expect(() => when(state, { type: C.RevokeGrant, data: { participant_id: 'agent-a', domain: 'risk.credit' } })).toThrow(
      expect.objectContaining({ field: 'domain' }),
    );
    const events = when(state, { type: C.RevokeGrant, data: { participant_id: 'agent-a', domain: 'risk' } });
    expect(events.map((e) => e.type)).toEqual([E.DomainGrantRevoked]);
    expect(() => when(state, { type: C.GrantDomain, data: { ...grant.data, domain_authority: 1.5 } })).toThrow(
      expect.objectContaining({ field: 'domain_authority' }),
    );
    expect(() => when(state, { type: C.GrantDomain, data: { ...grant.data, domain: 'risk.>' } })).toThrow(
      expect.objectContaining({ field: 'domain' }),
    );
  });

  it('deactivation ends everything; commands on an unknown participant name participant_id', () => {
    const { state } = given(register, { type: C.DeactivateParticipant, data: { participant_id: 'agent-a' } });
    expect(state.status).toBe('deactivated');
    expect(() => when(state, { type: C.RotateKey, data: { participant_id: 'agent-a', public_key: KEY_2 } })).toThrow(
      expect.objectContaining({ code: 'CONFLICT' }),
    );
    expect(() => when({ status: 'unregistered' }, { type: C.RevokeKey, data: { participant_id: 'x', key_id: 'k1' } })).toThrow(AcpError);
  });

  describe('keeping an active administrator', () => {
    const admin = {
      type: C.RegisterParticipant,
      data: { participant_id: 'admin-b', roles: ['administrator' as const], public_key: KEY_2 },
    };
    const confirm = (participant_id: string, confirmed_for = 'admin-x') => ({
      type: C.ConfirmAdministrator,
      data: { participant_id, confirmed_for },
    });

    it('given an active administrator, when it is confirmed for another one, then AdministratorConfirmed, and its record is unchanged', () => {
      const { state: before } = given(admin);
      const events = when(before, confirm('admin-b'));
      expect(events.map((e) => [e.type, e.data])).toEqual([
        [E.AdministratorConfirmed, { participant_id: 'admin-b', confirmed_for: 'admin-x' }],
      ]);
      expect(foldParticipant([...given(admin).events, ...events])).toEqual(before);
    });

    it('given an agent, a deactivated administrator or nobody, when confirmed, then CONFLICT (or SCHEMA_VIOLATION) at participant_id; and never for itself', () => {
      expect(() => when(given(register).state, confirm('agent-a'))).toThrow(
        expect.objectContaining({ code: 'CONFLICT', field: 'participant_id' }),
      );
      const gone = given(admin, { type: C.DeactivateParticipant, data: { participant_id: 'admin-b' } }).state;
      expect(() => when(gone, confirm('admin-b'))).toThrow(expect.objectContaining({ code: 'CONFLICT', field: 'participant_id' }));
      expect(() => when({ status: 'unregistered' }, confirm('nobody'))).toThrow(expect.objectContaining({ field: 'participant_id' }));
      expect(() => when(given(admin).state, confirm('admin-b', 'admin-b'))).toThrow(
        expect.objectContaining({ code: 'SCHEMA_VIOLATION', field: 'confirmed_for' }),
      );
    });

    it('administratorLostBy names how events leave an active administrator unable to administer (role, deactivation, last key), and nothing else', () => {
      const { state } = given(admin);
      const lost = (c: Pick<RegistryCommand, 'type' | 'data'>, s: ParticipantState = state) => administratorLostBy(s, when(s, c));
      expect(lost({ type: C.UpdateParticipant, data: { participant_id: 'admin-b', roles: ['agent'] } })).toBe('roles');
      expect(lost({ type: C.DeactivateParticipant, data: { participant_id: 'admin-b' } })).toBe('participant_id');
      expect(lost({ type: C.UpdateParticipant, data: { participant_id: 'admin-b', roles: ['agent', 'administrator'] } })).toBeUndefined();
      expect(lost({ type: C.UpdateParticipant, data: { participant_id: 'admin-b', display_name: 'B' } })).toBeUndefined();
      expect(lost({ type: C.RotateKey, data: { participant_id: 'admin-b', public_key: KEY_1 } })).toBeUndefined();
      expect(lost(confirm('admin-b'))).toBeUndefined();
      // Its last active key revoked: nobody can sign as it any more.
      expect(lost({ type: C.RevokeKey, data: { participant_id: 'admin-b', key_id: 'k1' } })).toBe('key_id');
      const rotated = given(admin, { type: C.RotateKey, data: { participant_id: 'admin-b', public_key: KEY_1 } }).state;
      expect(lost({ type: C.RevokeKey, data: { participant_id: 'admin-b', key_id: 'k1' } }, rotated)).toBeUndefined();
      expect(lost({ type: C.RevokeKey, data: { participant_id: 'admin-b', key_id: 'k2' } }, rotated)).toBe('key_id');
      // Not an administrator to begin with: nothing to keep.
      expect(lost({ type: C.DeactivateParticipant, data: { participant_id: 'agent-a' } }, given(register).state)).toBeUndefined();
    });
  });

  it('keysAddedBy names the key of a registration, a rotation and a rotation requested, and nothing for other events', () => {
    const { events, state } = given(register);
    expect(keysAddedBy(events)).toEqual([{ participant_id: 'agent-a', public_key: KEY_1 }]);
    expect(keysAddedBy(when(state, { type: C.RotateKey, data: { participant_id: 'agent-a', public_key: KEY_2 } }))).toEqual([
      { participant_id: 'agent-a', public_key: KEY_2 },
    ]);
    const pending = when(state, {
      type: C.RotateKey,
      data: { participant_id: 'agent-a', public_key: KEY_2, effective_at: '2026-01-02T00:00:00Z' },
    });
    expect(keysAddedBy(pending)).toEqual([{ participant_id: 'agent-a', public_key: KEY_2 }]);
    expect(keysAddedBy(when(state, { type: C.RevokeKey, data: { participant_id: 'agent-a', key_id: 'k1' } }))).toEqual([]);
  });

  it('a redelivered command yields the same event ids (deterministic)', () => {
    const m = meta();
    const a = decideRegistry({ ...m, ...register } as RegistryCommand, { status: 'unregistered' });
    const b = decideRegistry({ ...m, ...register } as RegistryCommand, { status: 'unregistered' });
    expect(a).toEqual(b);
  });

  it('stream names escape everything but letters and digits, reversibly and without collisions', () => {
    expect(participantStream('agent-a')).toBe('participant-agent_2Da');
    expect(participantStream('agent_a')).toBe('participant-agent_5Fa');
    expect(participantStream('a.b@c:d')).toBe('participant-a_2Eb_40c_3Ad');
  });
});
