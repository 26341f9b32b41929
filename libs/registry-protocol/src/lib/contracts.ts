/**
 * Names of the participant registry (DESIGN.md section 6): roles, actions, clearance levels,
 * command and event types, the stream category, and the authentication headers. Constants in
 * one place, never derived from class names.
 */

export const ROLES = ['agent', 'human-resolver', 'administrator'] as const;
export type Role = (typeof ROLES)[number];

/** What a domain grant can allow (RFC 14.2). `resolve` also needs the human-resolver role. */
export const ACTIONS = ['propose', 'respond', 'escalate', 'resolve'] as const;
export type Action = (typeof ACTIONS)[number];

/** Classification levels (RFC 14.5), lowest first: a clearance reads its level and below. */
export const CLASSIFICATION_LEVELS = ['public', 'internal', 'confidential', 'restricted'] as const;
export type ClassificationLevel = (typeof CLASSIFICATION_LEVELS)[number];
export const DEFAULT_CLEARANCE: ClassificationLevel = 'internal';

export const REGISTRY_EVENT_SCHEMA_VERSION = 1;

export const PARTICIPANT_STREAM_CATEGORY = 'participant';

export const REGISTRY_COMMAND_TYPES = {
  RegisterParticipant: 'RegisterParticipant',
  UpdateParticipant: 'UpdateParticipant',
  RotateKey: 'RotateKey',
  CancelKeyRotation: 'CancelKeyRotation',
  RevokeKey: 'RevokeKey',
  GrantDomain: 'GrantDomain',
  RevokeGrant: 'RevokeGrant',
  DeactivateParticipant: 'DeactivateParticipant',
  ConfirmAdministrator: 'ConfirmAdministrator',
} as const;
export type RegistryCommandType = (typeof REGISTRY_COMMAND_TYPES)[keyof typeof REGISTRY_COMMAND_TYPES];

export const REGISTRY_EVENT_TYPES = {
  ParticipantRegistered: 'ParticipantRegistered',
  ParticipantUpdated: 'ParticipantUpdated',
  KeyRotated: 'KeyRotated',
  KeyRotationRequested: 'KeyRotationRequested',
  KeyRotationCancelled: 'KeyRotationCancelled',
  KeyRevoked: 'KeyRevoked',
  DomainGranted: 'DomainGranted',
  DomainGrantRevoked: 'DomainGrantRevoked',
  ParticipantDeactivated: 'ParticipantDeactivated',
  AdministratorConfirmed: 'AdministratorConfirmed',
} as const;
export type RegistryEventType = (typeof REGISTRY_EVENT_TYPES)[keyof typeof REGISTRY_EVENT_TYPES];

/**
 * Participant ids on the registry: 1 to 60 characters of letters, digits and `_ - . : @`. The
 * stream name escapes every character but letters and digits (see participantStream), and the
 * event log caps stream names at 200 characters.
 */
const PARTICIPANT_ID = /^[A-Za-z0-9_.:@-]{1,60}$/;

export function isParticipantId(value: unknown): value is string {
  return typeof value === 'string' && PARTICIPANT_ID.test(value);
}

/**
 * `participant-<escaped id>`: stream ids may hold only letters, digits and `_`, so every other
 * character is written `_XX` (its hex code): `agent-a` is `participant-agent_2Da`. Reversible
 * and collision-free.
 */
export function participantStream(participantId: string): string {
  const escaped = [...participantId]
    .map((c) => (/[A-Za-z0-9]/.test(c) ? c : `_${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');
  return `${PARTICIPANT_STREAM_CATEGORY}-${escaped}`;
}

/** Authentication headers of a signed command (docs/security.md). */
export const AUTH_HEADERS = {
  participant: 'Conclave-Participant',
  timestamp: 'Conclave-Timestamp',
  nonce: 'Conclave-Nonce',
  signature: 'Conclave-Signature',
  /** Optional: which of the participant's keys signed (else every active key is tried). */
  keyId: 'Conclave-Key-Id',
} as const;

/**
 * NATS patterns of the registry and audit APIs, relative to the ACP prefix (the subject is
 * `<prefix>.<pattern>`, e.g. `acp.v1.participants.register`). Registry commands are served by
 * intake and need the administrator role; audit queries are served by the audit service.
 */
export const REGISTRY_PATTERNS = {
  register: 'v1.participants.register',
  update: 'v1.participants.update',
  rotateKey: 'v1.participants.rotate-key',
  cancelRotation: 'v1.participants.cancel-rotation',
  revokeKey: 'v1.participants.revoke-key',
  grant: 'v1.participants.grant',
  revokeGrant: 'v1.participants.revoke-grant',
  deactivate: 'v1.participants.deactivate',
  get: 'v1.participants.get',
  list: 'v1.participants.list',
} as const;

export const AUDIT_PATTERNS = {
  query: 'v1.audit.query',
  head: 'v1.audit.head',
} as const;

export const AUDIT_QUEUE_GROUP = 'conclave-audit';
