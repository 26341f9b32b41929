import { KEY_CLAIM_TYPES, REGISTRY_COMMAND_TYPES as C, publicKeyStream } from './contracts';
import { decideClaimPublicKey, evolveKeyClaim, initialKeyClaimState, keysAddedBy } from './key-claim';
import type { ClaimPublicKey } from './key-claim';
import { decideRegistry } from './participant.decider';
import type { RegistryCommand } from './participant.commands';
import { foldParticipant } from './participant.state';

const KEY = 'A-_'.repeat(14) + 'A';
let n = 0;
const meta = () => ({ command_id: `01J00000000000000000000${String(100 + ++n).slice(-3)}`, now: '2026-01-01T00:00:00Z', actor: 'admin' });
const claim = (participant_id: string): ClaimPublicKey => ({
  type: KEY_CLAIM_TYPES.ClaimPublicKey,
  ...meta(),
  data: { public_key: KEY, participant_id },
});

describe('public key claims: one public key, one participant', () => {
  it('given an unclaimed key, when alice claims it, then PublicKeyClaimed, and she holds it', () => {
    const events = decideClaimPublicKey(claim('alice'), initialKeyClaimState);
    expect(events.map((e) => [e.type, e.data])).toEqual([[KEY_CLAIM_TYPES.PublicKeyClaimed, { public_key: KEY, participant_id: 'alice' }]]);
    expect(events.reduce(evolveKeyClaim, initialKeyClaimState)).toEqual({ holder: 'alice' });
  });

  it('given alice holds the key, when she claims it again, then nothing; when mallory does, then CONFLICT at public_key, without naming alice', () => {
    const held = decideClaimPublicKey(claim('alice'), initialKeyClaimState).reduce(evolveKeyClaim, initialKeyClaimState);
    expect(decideClaimPublicKey(claim('alice'), held)).toEqual([]);
    expect(() => decideClaimPublicKey(claim('mallory'), held)).toThrow(expect.objectContaining({ code: 'CONFLICT', field: 'public_key' }));
    expect(() => decideClaimPublicKey(claim('mallory'), held)).toThrow(
      expect.not.objectContaining({ message: expect.stringContaining('alice') }),
    );
  });

  it('a claim with a bad participant id or metadata is refused (SCHEMA_VIOLATION)', () => {
    expect(() => decideClaimPublicKey({ ...claim('has space') }, initialKeyClaimState)).toThrow(
      expect.objectContaining({ code: 'SCHEMA_VIOLATION', field: 'participant_id' }),
    );
    expect(() => decideClaimPublicKey({ ...claim('alice'), now: 'yesterday' }, initialKeyClaimState)).toThrow(
      expect.objectContaining({ code: 'SCHEMA_VIOLATION' }),
    );
  });

  it('keysAddedBy names the key of a registration, a rotation and a rotation requested, and nothing for other events', () => {
    const register = decideRegistry(
      { ...meta(), type: C.RegisterParticipant, data: { participant_id: 'alice', roles: ['agent'], public_key: KEY } } as RegistryCommand,
      { status: 'unregistered' },
    );
    expect(keysAddedBy(register)).toEqual([{ participant_id: 'alice', public_key: KEY }]);
    const state = foldParticipant(register);
    const other = 'B'.repeat(43);
    const rotate = decideRegistry(
      { ...meta(), type: C.RotateKey, data: { participant_id: 'alice', public_key: other } } as RegistryCommand,
      state,
    );
    expect(keysAddedBy(rotate)).toEqual([{ participant_id: 'alice', public_key: other }]);
    const pending = decideRegistry(
      {
        ...meta(),
        type: C.RotateKey,
        data: { participant_id: 'alice', public_key: other, effective_at: '2026-01-02T00:00:00Z' },
      } as RegistryCommand,
      state,
    );
    expect(keysAddedBy(pending)).toEqual([{ participant_id: 'alice', public_key: other }]);
    const revoke = decideRegistry(
      { ...meta(), type: C.RevokeKey, data: { participant_id: 'alice', key_id: 'k1' } } as RegistryCommand,
      state,
    );
    expect(keysAddedBy(revoke)).toEqual([]);
  });

  it("a key's stream escapes base64url's - and _ into a valid, distinct stream id", () => {
    expect(publicKeyStream('ab-_')).toBe('publickey-ab_2D_5F');
    expect(publicKeyStream('a-b')).not.toBe(publicKeyStream('a_b'));
  });
});
