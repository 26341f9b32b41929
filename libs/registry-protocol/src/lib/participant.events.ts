/** Events of the `participant-<id>` stream (past tense). */
import type { EventEnvelope } from '@conclave/acp-protocol';
import { REGISTRY_EVENT_TYPES } from './contracts';
import type { Action, ClassificationLevel, Role } from './contracts';

export type RegistryEventEnvelope<T extends string, D> = Omit<EventEnvelope<T, D>, 'schema_version'> & {
  schema_version: number;
};

export type ParticipantRegistered = RegistryEventEnvelope<
  typeof REGISTRY_EVENT_TYPES.ParticipantRegistered,
  {
    participant_id: string;
    roles: Role[];
    clearance: ClassificationLevel;
    display_name: string | null;
    key: { key_id: string; public_key: string };
  }
>;

export type ParticipantUpdated = RegistryEventEnvelope<
  typeof REGISTRY_EVENT_TYPES.ParticipantUpdated,
  { participant_id: string; roles?: Role[]; clearance?: ClassificationLevel; display_name?: string }
>;

export type KeyRotated = RegistryEventEnvelope<
  typeof REGISTRY_EVENT_TYPES.KeyRotated,
  { participant_id: string; key: { key_id: string; public_key: string }; retired_key_ids: string[] }
>;

/** A rotation that takes effect at `effective_at` unless cancelled before: then the keys in `retires_key_ids` retire. */
export type KeyRotationRequested = RegistryEventEnvelope<
  typeof REGISTRY_EVENT_TYPES.KeyRotationRequested,
  { participant_id: string; key: { key_id: string; public_key: string }; effective_at: string; retires_key_ids: string[] }
>;

export type KeyRotationCancelled = RegistryEventEnvelope<
  typeof REGISTRY_EVENT_TYPES.KeyRotationCancelled,
  { participant_id: string; key_id: string; reason: string | null }
>;

export type KeyRevoked = RegistryEventEnvelope<
  typeof REGISTRY_EVENT_TYPES.KeyRevoked,
  { participant_id: string; key_id: string; reason: string | null }
>;

export type DomainGranted = RegistryEventEnvelope<
  typeof REGISTRY_EVENT_TYPES.DomainGranted,
  { participant_id: string; domain: string; actions: Action[]; domain_authority: number; trust_score: number }
>;

export type DomainGrantRevoked = RegistryEventEnvelope<
  typeof REGISTRY_EVENT_TYPES.DomainGrantRevoked,
  { participant_id: string; domain: string }
>;

export type ParticipantDeactivated = RegistryEventEnvelope<
  typeof REGISTRY_EVENT_TYPES.ParticipantDeactivated,
  { participant_id: string; reason: string | null }
>;

/** `participant_id` was an active administrator when `confirmed_for` lost the role; changes nothing else. */
export type AdministratorConfirmed = RegistryEventEnvelope<
  typeof REGISTRY_EVENT_TYPES.AdministratorConfirmed,
  { participant_id: string; confirmed_for: string }
>;

export type RegistryEvent =
  | ParticipantRegistered
  | ParticipantUpdated
  | KeyRotated
  | KeyRotationRequested
  | KeyRotationCancelled
  | KeyRevoked
  | DomainGranted
  | DomainGrantRevoked
  | ParticipantDeactivated
  | AdministratorConfirmed;
