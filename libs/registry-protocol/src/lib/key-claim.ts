/**
 * One public key, one participant. A key is claimed in its own `publickey-<key>` stream before a
 * participant's registration or rotation adds it: the first claim is appended where the stream
 * had none, so of participants adding the same key at the same instant, on any replicas, only one
 * can hold it. A claim is never released: a key stays with the participant that first held it,
 * retired, revoked or pending alike, so it never authenticates as two participants.
 */
import { AcpError, assertUlid, deriveEventId, isUtcTimestamp } from '@conclave/acp-protocol';
import type { CommandMetadata } from '@conclave/acp-protocol';
import { KEY_CLAIM_TYPES, REGISTRY_EVENT_SCHEMA_VERSION, REGISTRY_EVENT_TYPES, isParticipantId } from './contracts';
import type { RegistryEvent, RegistryEventEnvelope } from './participant.events';

export interface ClaimPublicKey extends CommandMetadata {
  type: typeof KEY_CLAIM_TYPES.ClaimPublicKey;
  data: { public_key: string; participant_id: string };
}

export type PublicKeyClaimed = RegistryEventEnvelope<
  typeof KEY_CLAIM_TYPES.PublicKeyClaimed,
  { public_key: string; participant_id: string }
>;

/** Who holds the key, if anyone. */
export type KeyClaimState = { readonly holder: string | null };
export const initialKeyClaimState: KeyClaimState = { holder: null };

export function evolveKeyClaim(state: KeyClaimState, event: PublicKeyClaimed): KeyClaimState {
  return state.holder === null ? { holder: event.data.participant_id } : state;
}

/** Nothing to append when the participant already holds the key (a retried command). */
export function decideClaimPublicKey(command: ClaimPublicKey, state: KeyClaimState): PublicKeyClaimed[] {
  assertUlid(command.command_id, 'command_id');
  if (!isUtcTimestamp(command.now)) throw new AcpError('SCHEMA_VIOLATION', 'now must be an ISO 8601 UTC timestamp', 'now');
  const d = command.data;
  if (!isParticipantId(d.participant_id))
    throw new AcpError('SCHEMA_VIOLATION', 'participant_id is not a participant id', 'participant_id');
  if (state.holder === d.participant_id) return [];
  // The holder is not named: a caller learns only that the key is taken.
  if (state.holder !== null) throw new AcpError('CONFLICT', 'this public key is already registered to another participant', 'public_key');
  return [
    {
      event_id: deriveEventId(command.command_id, 1),
      type: KEY_CLAIM_TYPES.PublicKeyClaimed,
      schema_version: REGISTRY_EVENT_SCHEMA_VERSION,
      occurred_at: command.now,
      actor: command.actor,
      causation_id: command.command_id,
      correlation_id: command.correlation_id ?? d.participant_id,
      data: { public_key: d.public_key, participant_id: d.participant_id },
    },
  ];
}

/** The keys `events` add to a participant (registration, rotation, a rotation requested). */
export function keysAddedBy(events: readonly RegistryEvent[]): { participant_id: string; public_key: string }[] {
  return events.flatMap((e) =>
    e.type === REGISTRY_EVENT_TYPES.ParticipantRegistered ||
    e.type === REGISTRY_EVENT_TYPES.KeyRotated ||
    e.type === REGISTRY_EVENT_TYPES.KeyRotationRequested
      ? [{ participant_id: e.data.participant_id, public_key: e.data.key.public_key }]
      : [],
  );
}
