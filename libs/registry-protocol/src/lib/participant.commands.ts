/**
 * Commands on the participant registry (imperative names). The edge stamps `command_id`, `now`
 * and the authenticated `actor` (an administrator, or the bootstrap), as for proposals.
 */
import type { CommandMetadata } from '@conclave/acp-protocol';
import { REGISTRY_COMMAND_TYPES } from './contracts';
import type { Action, ClassificationLevel, Role } from './contracts';

export interface RegisterParticipant extends CommandMetadata {
  type: typeof REGISTRY_COMMAND_TYPES.RegisterParticipant;
  data: {
    participant_id: string;
    roles: Role[];
    /** Ed25519 public key: the raw 32 bytes, base64url (the `x` of an OKP JWK). */
    public_key: string;
    clearance?: ClassificationLevel;
    display_name?: string;
  };
}

export interface UpdateParticipant extends CommandMetadata {
  type: typeof REGISTRY_COMMAND_TYPES.UpdateParticipant;
  data: { participant_id: string; roles?: Role[]; clearance?: ClassificationLevel; display_name?: string };
}

/**
 * Adds a new key. Without `effective_at` every key active until now is retired at once (an
 * administrator rotating another participant's key). With it the rotation is pending until that
 * time: the current keys keep working, the new one does not yet, and the rotation can be
 * cancelled (a participant rotating its own key, which a thief of that key could do too).
 */
export interface RotateKey extends CommandMetadata {
  type: typeof REGISTRY_COMMAND_TYPES.RotateKey;
  data: { participant_id: string; public_key: string; effective_at?: string };
}

/** Cancels the pending rotation (its new key never authenticates). */
export interface CancelKeyRotation extends CommandMetadata {
  type: typeof REGISTRY_COMMAND_TYPES.CancelKeyRotation;
  data: { participant_id: string; key_id?: string; reason?: string };
}

export interface RevokeKey extends CommandMetadata {
  type: typeof REGISTRY_COMMAND_TYPES.RevokeKey;
  data: { participant_id: string; key_id: string; reason?: string };
}

/** Grants (or replaces the grant on) one domain and its subtree, with the factors used there. */
export interface GrantDomain extends CommandMetadata {
  type: typeof REGISTRY_COMMAND_TYPES.GrantDomain;
  data: {
    participant_id: string;
    domain: string;
    /** Default: all of ACTIONS. */
    actions?: Action[];
    domain_authority: number;
    trust_score: number;
  };
}

export interface RevokeGrant extends CommandMetadata {
  type: typeof REGISTRY_COMMAND_TYPES.RevokeGrant;
  data: { participant_id: string; domain: string };
}

export interface DeactivateParticipant extends CommandMetadata {
  type: typeof REGISTRY_COMMAND_TYPES.DeactivateParticipant;
  data: { participant_id: string; reason?: string };
}

/**
 * Not on the registry API: the registry's own step before a command takes the administrator role
 * from an active administrator (`confirmed_for`). It records that `participant_id` is an active
 * administrator at its stream's current version, so that a concurrent removal of that one fails
 * its version check (see ParticipantDirectory).
 */
export interface ConfirmAdministrator extends CommandMetadata {
  type: typeof REGISTRY_COMMAND_TYPES.ConfirmAdministrator;
  data: { participant_id: string; confirmed_for: string };
}

export type RegistryCommand =
  | RegisterParticipant
  | UpdateParticipant
  | RotateKey
  | CancelKeyRotation
  | RevokeKey
  | GrantDomain
  | RevokeGrant
  | DeactivateParticipant
  | ConfirmAdministrator;
