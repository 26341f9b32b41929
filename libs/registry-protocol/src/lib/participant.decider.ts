/**
 * The registry decider: one small function per command, gathered by `decideRegistry`, whose
 * switch ends in an exhaustiveness check. Events derive their ids from the command id, so a
 * redelivered command appends nothing new.
 */
import { AcpError, assertUlid, deriveEventId, isDomain, isUtcTimestamp } from '@conclave/acp-protocol';
import type { CommandMetadata } from '@conclave/acp-protocol';
import {
  ACTIONS,
  CLASSIFICATION_LEVELS,
  DEFAULT_CLEARANCE,
  REGISTRY_COMMAND_TYPES,
  REGISTRY_EVENT_SCHEMA_VERSION,
  REGISTRY_EVENT_TYPES,
  ROLES,
  isParticipantId,
} from './contracts';
import type { Action, ClassificationLevel, Role } from './contracts';
import type {
  CancelKeyRotation,
  ConfirmAdministrator,
  DeactivateParticipant,
  GrantDomain,
  RegisterParticipant,
  RegistryCommand,
  RevokeGrant,
  RevokeKey,
  RotateKey,
  UpdateParticipant,
} from './participant.commands';
import type { RegistryEvent } from './participant.events';
import { evolveParticipant, settleRotation } from './participant.state';
import type { ActiveParticipant, ParticipantRecord, ParticipantState } from './participant.state';

/** Ed25519 raw public keys are 32 bytes: 43 base64url characters without padding. */
const PUBLIC_KEY = /^[A-Za-z0-9_-]{43}$/;

export function isPublicKey(value: unknown): value is string {
  return typeof value === 'string' && PUBLIC_KEY.test(value);
}

type Draft = { type: RegistryEvent['type']; data: unknown };

function emit(command: CommandMetadata, participantId: string, drafts: Draft[]): RegistryEvent[] {
  return drafts.map(
    (d, i) =>
      ({
        event_id: deriveEventId(command.command_id, i + 1),
        type: d.type,
        schema_version: REGISTRY_EVENT_SCHEMA_VERSION,
        occurred_at: command.now,
        actor: command.actor,
        causation_id: command.command_id,
        correlation_id: command.correlation_id ?? participantId,
        data: d.data,
      }) as RegistryEvent,
  );
}

function checkMetadata(command: CommandMetadata): void {
  assertUlid(command.command_id, 'command_id');
  if (!isUtcTimestamp(command.now)) throw new AcpError('SCHEMA_VIOLATION', 'now must be an ISO 8601 UTC timestamp', 'now');
  if (typeof command.actor !== 'string' || command.actor.length === 0) throw new AcpError('SCHEMA_VIOLATION', 'actor is required', 'actor');
}

function checkRoles(roles: unknown): Role[] {
  if (!Array.isArray(roles) || roles.length === 0 || !roles.every((r) => (ROLES as readonly unknown[]).includes(r))) {
    throw new AcpError('SCHEMA_VIOLATION', `roles must be a non-empty list of ${ROLES.join(', ')}`, 'roles');
  }
  return [...new Set(roles as Role[])];
}

function checkClearance(level: unknown): ClassificationLevel {
  if (!(CLASSIFICATION_LEVELS as readonly unknown[]).includes(level)) {
    throw new AcpError('SCHEMA_VIOLATION', `clearance must be one of ${CLASSIFICATION_LEVELS.join(', ')}`, 'clearance');
  }
  return level as ClassificationLevel;
}

function checkPublicKey(key: unknown): string {
  if (!isPublicKey(key)) {
    throw new AcpError('SCHEMA_VIOLATION', 'public_key must be an Ed25519 public key: 32 bytes, base64url without padding', 'public_key');
  }
  return key;
}

function checkFactor(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new AcpError('SCHEMA_VIOLATION', `${field} must be a number in [0, 1]`, field);
  }
  return value;
}

function requireActive(state: ParticipantState, participantId: string): ActiveParticipant {
  if (state.status === 'unregistered') {
    throw new AcpError('SCHEMA_VIOLATION', `participant ${participantId} is not registered`, 'participant_id');
  }
  if (state.status === 'deactivated') {
    throw new AcpError('CONFLICT', `participant ${participantId} is deactivated`, 'participant_id');
  }
  return state;
}

function nextKeyId(participant: ParticipantRecord): string {
  return `k${participant.keys.length + 1}`;
}

export function decideRegisterParticipant(command: RegisterParticipant, state: ParticipantState): RegistryEvent[] {
  checkMetadata(command);
  const d = command.data;
  if (!isParticipantId(d.participant_id)) {
    throw new AcpError('SCHEMA_VIOLATION', 'participant_id must be 1 to 60 characters of letters, digits and _ - . : @', 'participant_id');
  }
  if (state.status !== 'unregistered') {
    throw new AcpError('CONFLICT', `participant ${d.participant_id} is already registered`, 'participant_id');
  }
  const data = {
    participant_id: d.participant_id,
    roles: checkRoles(d.roles),
    clearance: d.clearance === undefined ? DEFAULT_CLEARANCE : checkClearance(d.clearance),
    display_name: d.display_name ?? null,
    key: { key_id: 'k1', public_key: checkPublicKey(d.public_key) },
  };
  return emit(command, d.participant_id, [{ type: REGISTRY_EVENT_TYPES.ParticipantRegistered, data }]);
}

export function decideUpdateParticipant(command: UpdateParticipant, state: ParticipantState): RegistryEvent[] {
  checkMetadata(command);
  const d = command.data;
  requireActive(state, d.participant_id);
  const data: Record<string, unknown> = { participant_id: d.participant_id };
  if (d.roles !== undefined) data['roles'] = checkRoles(d.roles);
  if (d.clearance !== undefined) data['clearance'] = checkClearance(d.clearance);
  if (d.display_name !== undefined) data['display_name'] = d.display_name;
  if (Object.keys(data).length === 1) throw new AcpError('SCHEMA_VIOLATION', 'nothing to update: give roles, clearance or display_name');
  return emit(command, d.participant_id, [{ type: REGISTRY_EVENT_TYPES.ParticipantUpdated, data }]);
}

/**
 * A rotation with `effective_at` is pending until then (one at a time: another needs the first
 * cancelled); one without takes effect at once and supersedes a pending one, which is cancelled.
 */
export function decideRotateKey(command: RotateKey, state: ParticipantState): RegistryEvent[] {
  checkMetadata(command);
  const d = command.data;
  const p = settleRotation(requireActive(state, d.participant_id).participant, command.now);
  const publicKey = checkPublicKey(d.public_key);
  if (p.keys.some((k) => k.public_key === publicKey)) {
    throw new AcpError('CONFLICT', 'this public key was already used by the participant; generate a new one', 'public_key');
  }
  const key = { key_id: nextKeyId(p), public_key: publicKey };
  const active = p.keys.filter((k) => k.status === 'active').map((k) => k.key_id);
  if (d.effective_at !== undefined) {
    if (!isUtcTimestamp(d.effective_at) || Date.parse(d.effective_at) <= Date.parse(command.now)) {
      throw new AcpError('SCHEMA_VIOLATION', 'effective_at must be an ISO 8601 UTC timestamp after now', 'effective_at');
    }
    if (p.pending_rotation) {
      throw new AcpError(
        'CONFLICT',
        `a rotation to ${p.pending_rotation.key_id} is already pending until ${p.pending_rotation.effective_at}; cancel it first`,
        'participant_id',
      );
    }
    return emit(command, d.participant_id, [
      {
        type: REGISTRY_EVENT_TYPES.KeyRotationRequested,
        data: { participant_id: d.participant_id, key, effective_at: d.effective_at, retires_key_ids: active },
      },
    ]);
  }
  const superseded: Draft[] = p.pending_rotation
    ? [
        {
          type: REGISTRY_EVENT_TYPES.KeyRotationCancelled,
          data: { participant_id: d.participant_id, key_id: p.pending_rotation.key_id, reason: 'superseded by an immediate rotation' },
        },
      ]
    : [];
  return emit(command, d.participant_id, [
    ...superseded,
    { type: REGISTRY_EVENT_TYPES.KeyRotated, data: { participant_id: d.participant_id, key, retired_key_ids: active } },
  ]);
}

export function decideCancelKeyRotation(command: CancelKeyRotation, state: ParticipantState): RegistryEvent[] {
  checkMetadata(command);
  const d = command.data;
  const pending = settleRotation(requireActive(state, d.participant_id).participant, command.now).pending_rotation;
  if (!pending) throw new AcpError('CONFLICT', `participant ${d.participant_id} has no pending key rotation`, 'participant_id');
  if (d.key_id !== undefined && d.key_id !== pending.key_id) {
    throw new AcpError('SCHEMA_VIOLATION', `the pending rotation is to ${pending.key_id}, not ${d.key_id}`, 'key_id');
  }
  return emit(command, d.participant_id, [
    {
      type: REGISTRY_EVENT_TYPES.KeyRotationCancelled,
      data: { participant_id: d.participant_id, key_id: pending.key_id, reason: d.reason ?? null },
    },
  ]);
}

export function decideRevokeKey(command: RevokeKey, state: ParticipantState): RegistryEvent[] {
  checkMetadata(command);
  const d = command.data;
  const s = requireActive(state, d.participant_id);
  const key = s.participant.keys.find((k) => k.key_id === d.key_id);
  if (!key) throw new AcpError('SCHEMA_VIOLATION', `participant ${d.participant_id} has no key ${d.key_id}`, 'key_id');
  if (key.status === 'revoked') return [];
  return emit(command, d.participant_id, [
    { type: REGISTRY_EVENT_TYPES.KeyRevoked, data: { participant_id: d.participant_id, key_id: d.key_id, reason: d.reason ?? null } },
  ]);
}

export function decideGrantDomain(command: GrantDomain, state: ParticipantState): RegistryEvent[] {
  checkMetadata(command);
  const d = command.data;
  requireActive(state, d.participant_id);
  if (!isDomain(d.domain)) throw new AcpError('SCHEMA_VIOLATION', "domain must be segments of [A-Za-z0-9_-] joined by '.'", 'domain');
  const actions = d.actions ?? [...ACTIONS];
  if (!Array.isArray(actions) || actions.length === 0 || !actions.every((a) => (ACTIONS as readonly unknown[]).includes(a))) {
    throw new AcpError('SCHEMA_VIOLATION', `actions must be a non-empty list of ${ACTIONS.join(', ')}`, 'actions');
  }
  const data = {
    participant_id: d.participant_id,
    domain: d.domain,
    actions: ACTIONS.filter((a) => (actions as Action[]).includes(a)),
    domain_authority: checkFactor(d.domain_authority, 'domain_authority'),
    trust_score: checkFactor(d.trust_score, 'trust_score'),
  };
  return emit(command, d.participant_id, [{ type: REGISTRY_EVENT_TYPES.DomainGranted, data }]);
}

export function decideRevokeGrant(command: RevokeGrant, state: ParticipantState): RegistryEvent[] {
  checkMetadata(command);
  const d = command.data;
  const s = requireActive(state, d.participant_id);
  if (!s.participant.grants[d.domain]) {
    throw new AcpError(
      'SCHEMA_VIOLATION',
      `participant ${d.participant_id} has no grant on ${d.domain} itself (grants are revoked where they were given)`,
      'domain',
    );
  }
  return emit(command, d.participant_id, [
    { type: REGISTRY_EVENT_TYPES.DomainGrantRevoked, data: { participant_id: d.participant_id, domain: d.domain } },
  ]);
}

export function decideDeactivateParticipant(command: DeactivateParticipant, state: ParticipantState): RegistryEvent[] {
  checkMetadata(command);
  const d = command.data;
  if (state.status === 'deactivated') return [];
  requireActive(state, d.participant_id);
  return emit(command, d.participant_id, [
    { type: REGISTRY_EVENT_TYPES.ParticipantDeactivated, data: { participant_id: d.participant_id, reason: d.reason ?? null } },
  ]);
}

export function decideConfirmAdministrator(command: ConfirmAdministrator, state: ParticipantState): RegistryEvent[] {
  checkMetadata(command);
  const d = command.data;
  if (!isParticipantId(d.confirmed_for) || d.confirmed_for === d.participant_id) {
    throw new AcpError('SCHEMA_VIOLATION', 'confirmed_for must be another participant id', 'confirmed_for');
  }
  if (!isActiveAdministrator(state)) {
    throw new AcpError('CONFLICT', `participant ${d.participant_id} is not an active administrator`, 'participant_id');
  }
  return emit(command, d.participant_id, [
    { type: REGISTRY_EVENT_TYPES.AdministratorConfirmed, data: { participant_id: d.participant_id, confirmed_for: d.confirmed_for } },
  ]);
}

/** An administrator that can act: active, with the role, and a key that authenticates. */
export function isActiveAdministrator(state: ParticipantState): boolean {
  return (
    state.status === 'active' &&
    state.participant.roles.includes('administrator') &&
    state.participant.keys.some((k) => k.status === 'active')
  );
}

/**
 * How `events` would leave the active administrator in `state` unable to administer: by dropping
 * the role (`'roles'`), by deactivating it (`'participant_id'`) or by revoking its last active key
 * (`'key_id'`); undefined if they would not. The registry keeps an active administrator, so such
 * events need another one confirmed.
 */
export function administratorLostBy(
  state: ParticipantState,
  events: readonly RegistryEvent[],
): 'roles' | 'participant_id' | 'key_id' | undefined {
  if (!isActiveAdministrator(state)) return undefined;
  const after = events.reduce(evolveParticipant, state);
  if (isActiveAdministrator(after)) return undefined;
  if (after.status !== 'active') return 'participant_id';
  return after.participant.roles.includes('administrator') ? 'key_id' : 'roles';
}

/** The keys `events` add to a participant: a registration's, a rotation's, a rotation requested. */
export function keysAddedBy(events: readonly RegistryEvent[]): { participant_id: string; public_key: string }[] {
  return events.flatMap((e) =>
    e.type === REGISTRY_EVENT_TYPES.ParticipantRegistered ||
    e.type === REGISTRY_EVENT_TYPES.KeyRotated ||
    e.type === REGISTRY_EVENT_TYPES.KeyRotationRequested
      ? [{ participant_id: e.data.participant_id, public_key: e.data.key.public_key }]
      : [],
  );
}

export function decideRegistry(command: RegistryCommand, state: ParticipantState): RegistryEvent[] {
  switch (command.type) {
    case REGISTRY_COMMAND_TYPES.RegisterParticipant:
      return decideRegisterParticipant(command, state);
    case REGISTRY_COMMAND_TYPES.UpdateParticipant:
      return decideUpdateParticipant(command, state);
    case REGISTRY_COMMAND_TYPES.RotateKey:
      return decideRotateKey(command, state);
    case REGISTRY_COMMAND_TYPES.CancelKeyRotation:
      return decideCancelKeyRotation(command, state);
    case REGISTRY_COMMAND_TYPES.RevokeKey:
      return decideRevokeKey(command, state);
    case REGISTRY_COMMAND_TYPES.GrantDomain:
      return decideGrantDomain(command, state);
    case REGISTRY_COMMAND_TYPES.RevokeGrant:
      return decideRevokeGrant(command, state);
    case REGISTRY_COMMAND_TYPES.DeactivateParticipant:
      return decideDeactivateParticipant(command, state);
    case REGISTRY_COMMAND_TYPES.ConfirmAdministrator:
      return decideConfirmAdministrator(command, state);
    default: {
      const _exhaustive: never = command;
      throw new AcpError('SCHEMA_VIOLATION', `unknown registry command ${(_exhaustive as { type: string }).type}`);
    }
  }
}
