// Public surface of @conclave/registry-protocol: the participant registry, authorization rules,
// what is signed, and the audit hash chain. Pure: no I/O, no clock, no crypto (inputs instead).

export {
  ACTIONS,
  AUDIT_PATTERNS,
  AUDIT_QUEUE_GROUP,
  AUTH_HEADERS,
  CLASSIFICATION_LEVELS,
  DEFAULT_CLEARANCE,
  PARTICIPANT_STREAM_CATEGORY,
  REGISTRY_COMMAND_TYPES,
  REGISTRY_EVENT_SCHEMA_VERSION,
  REGISTRY_EVENT_TYPES,
  REGISTRY_PATTERNS,
  ROLES,
  isParticipantId,
  participantStream,
} from './lib/contracts';
export type { Action, ClassificationLevel, RegistryCommandType, RegistryEventType, Role } from './lib/contracts';
// One canonical JSON for payload hashes and audit entries alike (acp-protocol owns it).
export { canonicalJson } from '@conclave/acp-protocol';
export type {
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
} from './lib/participant.commands';
export type {
  AdministratorConfirmed,
  DomainGrantRevoked,
  DomainGranted,
  KeyRevoked,
  KeyRotated,
  KeyRotationCancelled,
  KeyRotationRequested,
  ParticipantDeactivated,
  ParticipantRegistered,
  ParticipantUpdated,
  RegistryEvent,
} from './lib/participant.events';
export { evolveParticipant, foldParticipant, initialParticipantState, settleRotation } from './lib/participant.state';
export type {
  ActiveParticipant,
  DeactivatedParticipant,
  DomainGrant,
  KeyStatus,
  ParticipantKey,
  ParticipantRecord,
  ParticipantState,
  PendingRotation,
  UnregisteredParticipant,
} from './lib/participant.state';
export {
  administratorLostBy,
  decideCancelKeyRotation,
  decideConfirmAdministrator,
  decideDeactivateParticipant,
  decideGrantDomain,
  decideRegisterParticipant,
  decideRegistry,
  decideRevokeGrant,
  decideRevokeKey,
  decideRotateKey,
  decideUpdateParticipant,
  isActiveAdministrator,
  isPublicKey,
  keysAddedBy,
} from './lib/participant.decider';
export { activeKeys, authorize, clears, grantFor, hasRole, isClassificationLevel, requireRole } from './lib/authorization';
export { SIGNATURE_SCHEME, checkFreshness, isNonce, signingInput } from './lib/signing';
export type { Freshness, SignedFields } from './lib/signing';
export { GENESIS_HASH, chainEntry, entryHash, verifyChain } from './lib/audit-chain';
export type { AuditEntry, AuditEntryContent, ChainBreak, HashFunction, VerifyOptions, VerifyResult } from './lib/audit-chain';
