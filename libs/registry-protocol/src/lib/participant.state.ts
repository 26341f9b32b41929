/**
 * A participant's state, a tagged union keyed by status, folded from its events. Immutable:
 * `evolveParticipant` returns a new state.
 */
import { AcpError } from '@conclave/acp-protocol';
import { REGISTRY_EVENT_TYPES } from './contracts';
import type { Action, ClassificationLevel, Role } from './contracts';
import type { RegistryEvent } from './participant.events';

/** `pending`: added by a rotation that has not taken effect yet (it never authenticates before). */
export type KeyStatus = 'active' | 'pending' | 'retired' | 'revoked';

export interface ParticipantKey {
  key_id: string;
  /** Ed25519 raw public key, base64url. */
  public_key: string;
  status: KeyStatus;
  added_at: string;
  /** When it stopped being accepted (rotation or revocation). */
  ended_at: string | null;
}

/** A participant's own rotation, waiting for its cool-down: cancellable until `effective_at`. */
export interface PendingRotation {
  key_id: string;
  requested_at: string;
  requested_by: string;
  effective_at: string;
  /** The keys active when it was requested: they retire when it takes effect. */
  retires_key_ids: string[];
}

export interface DomainGrant {
  domain: string;
  actions: Action[];
  domain_authority: number;
  trust_score: number;
  granted_at: string;
  granted_by: string;
}

export interface ParticipantRecord {
  participant_id: string;
  display_name: string | null;
  roles: Role[];
  clearance: ClassificationLevel;
  keys: ParticipantKey[];
  /** By domain; a grant covers its domain and every subdomain (see grantFor). */
  grants: Record<string, DomainGrant>;
  registered_at: string;
  /** Present while a rotation waits for its cool-down (see settleRotation). */
  pending_rotation?: PendingRotation;
}

export interface UnregisteredParticipant {
  status: 'unregistered';
}
export interface ActiveParticipant {
  status: 'active';
  participant: ParticipantRecord;
}
export interface DeactivatedParticipant {
  status: 'deactivated';
  participant: ParticipantRecord;
  deactivated_at: string;
}

export type ParticipantState = UnregisteredParticipant | ActiveParticipant | DeactivatedParticipant;

export const initialParticipantState: UnregisteredParticipant = Object.freeze({ status: 'unregistered' as const });

function cannotApply(event: RegistryEvent, state: ParticipantState): AcpError {
  return new AcpError('INTERNAL', `event ${event.type} (${event.event_id}) cannot apply to a participant in state ${state.status}`);
}

function withRecord(state: ActiveParticipant, record: ParticipantRecord): ActiveParticipant {
  return { status: 'active', participant: record };
}

/**
 * The record as it stands at `at` (ISO 8601): a pending rotation whose `effective_at` has come
 * has taken effect, its new key active and the keys it retires retired from `effective_at` on.
 * Time enters only as this argument: a rotation takes effect without an event of its own, so
 * every reader of keys (authentication, the registry's own decisions) settles with its `now`.
 */
export function settleRotation(record: ParticipantRecord, at: string): ParticipantRecord {
  const pending = record.pending_rotation;
  if (!pending || Date.parse(at) < Date.parse(pending.effective_at)) return record;
  const retires = new Set(pending.retires_key_ids);
  const keys = record.keys.map((k) => {
    if (k.key_id === pending.key_id && k.status === 'pending') return { ...k, status: 'active' as const, added_at: pending.effective_at };
    if (retires.has(k.key_id) && k.status === 'active') return { ...k, status: 'retired' as const, ended_at: pending.effective_at };
    return k;
  });
  const { pending_rotation: _done, ...rest } = record;
  return { ...rest, keys };
}

export function evolveParticipant(state: ParticipantState, event: RegistryEvent): ParticipantState {
  if (event.type === REGISTRY_EVENT_TYPES.ParticipantRegistered) {
    if (state.status !== 'unregistered') throw cannotApply(event, state);
    const d = event.data;
    return {
      status: 'active',
      participant: {
        participant_id: d.participant_id,
        display_name: d.display_name,
        roles: [...d.roles],
        clearance: d.clearance,
        keys: [{ key_id: d.key.key_id, public_key: d.key.public_key, status: 'active', added_at: event.occurred_at, ended_at: null }],
        grants: {},
        registered_at: event.occurred_at,
      },
    };
  }
  if (state.status !== 'active') throw cannotApply(event, state);
  const p = settleRotation(state.participant, event.occurred_at);
  switch (event.type) {
    case REGISTRY_EVENT_TYPES.ParticipantUpdated: {
      const d = event.data;
      return withRecord(state, {
        ...p,
        roles: d.roles ? [...d.roles] : p.roles,
        clearance: d.clearance ?? p.clearance,
        display_name: d.display_name ?? p.display_name,
      });
    }
    case REGISTRY_EVENT_TYPES.KeyRotated: {
      const retired = new Set(event.data.retired_key_ids);
      const keys = p.keys.map((k) => (retired.has(k.key_id) ? { ...k, status: 'retired' as const, ended_at: event.occurred_at } : k));
      keys.push({ ...event.data.key, status: 'active', added_at: event.occurred_at, ended_at: null });
      return withRecord(state, { ...p, keys });
    }
    case REGISTRY_EVENT_TYPES.KeyRotationRequested: {
      const d = event.data;
      const pending: PendingRotation = {
        key_id: d.key.key_id,
        requested_at: event.occurred_at,
        requested_by: event.actor,
        effective_at: d.effective_at,
        retires_key_ids: [...d.retires_key_ids],
      };
      const key: ParticipantKey = { ...d.key, status: 'pending', added_at: event.occurred_at, ended_at: null };
      return withRecord(state, { ...p, keys: [...p.keys, key], pending_rotation: pending });
    }
    case REGISTRY_EVENT_TYPES.KeyRotationCancelled:
      return withRecord(state, endKey(p, event.data.key_id, event.occurred_at));
    case REGISTRY_EVENT_TYPES.KeyRevoked:
      return withRecord(state, endKey(p, event.data.key_id, event.occurred_at));
    case REGISTRY_EVENT_TYPES.DomainGranted: {
      const d = event.data;
      const grant: DomainGrant = {
        domain: d.domain,
        actions: [...d.actions],
        domain_authority: d.domain_authority,
        trust_score: d.trust_score,
        granted_at: event.occurred_at,
        granted_by: event.actor,
      };
      return withRecord(state, { ...p, grants: { ...p.grants, [d.domain]: grant } });
    }
    case REGISTRY_EVENT_TYPES.DomainGrantRevoked: {
      const { [event.data.domain]: _gone, ...grants } = p.grants;
      return withRecord(state, { ...p, grants });
    }
    case REGISTRY_EVENT_TYPES.ParticipantDeactivated:
      return { status: 'deactivated', participant: p, deactivated_at: event.occurred_at };
    case REGISTRY_EVENT_TYPES.AdministratorConfirmed:
      return withRecord(state, p);
    default: {
      const _exhaustive: never = event;
      return _exhaustive;
    }
  }
}

/** The key revoked (or its pending rotation cancelled): it never authenticates again. */
function endKey(p: ParticipantRecord, keyId: string, at: string): ParticipantRecord {
  const keys = p.keys.map((k) => (k.key_id === keyId ? { ...k, status: 'revoked' as const, ended_at: at } : k));
  if (p.pending_rotation?.key_id !== keyId) return { ...p, keys };
  const { pending_rotation: _cancelled, ...rest } = p;
  return { ...rest, keys };
}

export function foldParticipant(events: readonly RegistryEvent[]): ParticipantState {
  return events.reduce(evolveParticipant, initialParticipantState as ParticipantState);
}
