import { Inject, Injectable, Logger } from '@nestjs/common';
import { AcpError } from '@conclave/acp-protocol';
import { ParticipantRecord, ParticipantState, REGISTRY_COMMAND_TYPES, RegistryCommand, settleRotation } from '@conclave/registry-protocol';
import { CommandContext, Identity, ParticipantDirectory, SERVICE_CONFIG } from '@conclave/service-kit';
import { IntakeConfig } from './intake.config';

type Body = Record<string, unknown>;

/** Registry commands at the edge: shape checks here, rules in the pure decider (registry-protocol). */
@Injectable()
export class RegistryCommands {
  private readonly logger = new Logger('Registry');

  constructor(
    private readonly directory: ParticipantDirectory,
    private readonly context: CommandContext,
    @Inject(SERVICE_CONFIG) private readonly config: IntakeConfig,
  ) {}

  register(body: unknown, who: Identity) {
    const b = this.admin(body, who);
    this.requireKeyUnused(b['public_key'], b['participant_id']);
    return this.run(REGISTRY_COMMAND_TYPES.RegisterParticipant, who, {
      participant_id: str(b, 'participant_id'),
      roles: b['roles'],
      public_key: str(b, 'public_key'),
      clearance: optional(b, 'clearance'),
      display_name: optional(b, 'display_name'),
    });
  }

  /**
   * Dropping the administrator role (like deactivating, or revoking a last key) is kept to the
   * registry's rule: an active administrator always remains (ParticipantDirectory).
   */
  update(body: unknown, who: Identity) {
    const b = this.admin(body, who);
    return this.run(REGISTRY_COMMAND_TYPES.UpdateParticipant, who, {
      participant_id: str(b, 'participant_id'),
      roles: b['roles'],
      clearance: optional(b, 'clearance'),
      display_name: optional(b, 'display_name'),
    });
  }

  /**
   * An administrator rotating another participant's key: at once. The participant itself (signed
   * with its current key, which a thief may hold too): pending for the cool-down, during which
   * the current key keeps working and can cancel it; the request is on the audit chain and in the
   * log, and `participants get` shows it.
   */
  async rotateKey(body: unknown, who: Identity) {
    const b = object(body);
    const id = str(b, 'participant_id');
    const own = id === who.participant_id;
    if (!own) this.context.requireRole(who, 'administrator');
    this.requireKeyUnused(b['public_key'], id);
    const effectiveAt = own ? new Date(Date.parse(this.context.now()) + this.config.keyRotationCooldownMs).toISOString() : undefined;
    const result = await this.run(REGISTRY_COMMAND_TYPES.RotateKey, who, {
      participant_id: id,
      public_key: str(b, 'public_key'),
      effective_at: effectiveAt,
    });
    const pending = result.participant.pending_rotation;
    if (pending) {
      this.logger.warn(
        `participant ${id}: rotation to key ${pending.key_id} requested by ${pending.requested_by}; takes effect at ${pending.effective_at} unless cancelled (participants cancel-rotation)`,
      );
    }
    return result;
  }

  /** Cancels a pending rotation: the participant itself (with its current key) or an administrator. */
  async cancelRotation(body: unknown, who: Identity) {
    const b = object(body);
    const id = str(b, 'participant_id');
    if (id !== who.participant_id) this.context.requireRole(who, 'administrator');
    const result = await this.run(REGISTRY_COMMAND_TYPES.CancelKeyRotation, who, {
      participant_id: id,
      key_id: optional(b, 'key_id'),
      reason: optional(b, 'reason'),
    });
    this.logger.warn(`participant ${id}: pending key rotation cancelled by ${who.participant_id}`);
    return result;
  }

  revokeKey(body: unknown, who: Identity) {
    const b = this.admin(body, who);
    return this.run(REGISTRY_COMMAND_TYPES.RevokeKey, who, {
      participant_id: str(b, 'participant_id'),
      key_id: str(b, 'key_id'),
      reason: optional(b, 'reason'),
    });
  }

  grant(body: unknown, who: Identity) {
    const b = this.admin(body, who);
    return this.run(REGISTRY_COMMAND_TYPES.GrantDomain, who, {
      participant_id: str(b, 'participant_id'),
      domain: str(b, 'domain'),
      actions: b['actions'],
      domain_authority: b['domain_authority'],
      trust_score: b['trust_score'],
    });
  }

  revokeGrant(body: unknown, who: Identity) {
    const b = this.admin(body, who);
    return this.run(REGISTRY_COMMAND_TYPES.RevokeGrant, who, { participant_id: str(b, 'participant_id'), domain: str(b, 'domain') });
  }

  deactivate(body: unknown, who: Identity) {
    const b = this.admin(body, who);
    return this.run(REGISTRY_COMMAND_TYPES.DeactivateParticipant, who, {
      participant_id: str(b, 'participant_id'),
      reason: optional(b, 'reason'),
    });
  }

  async get(body: unknown, who: Identity): Promise<{ participant: ParticipantView }> {
    const b = object(body);
    const id = str(b, 'participant_id');
    if (id !== who.participant_id) this.context.requireRole(who, 'administrator');
    const state = await this.directory.load(id);
    if (state.status === 'unregistered') throw new AcpError('SCHEMA_VIOLATION', `participant ${id} is not registered`, 'participant_id');
    return { participant: view(state, this.context.now()) };
  }

  list(who: Identity): { participants: ParticipantRecord[] } {
    this.context.requireRole(who, 'administrator');
    const now = this.context.now();
    return { participants: this.directory.list().map((p) => settleRotation(p, now)) };
  }

  /**
   * One public key, one participant: a key another participant holds (active, pending, rotated out
   * or revoked) is refused, so no key ever authenticates as two participants, nor lets one claim
   * another signed in its name. The registry's list follows the log a moment behind it; the
   * directory's reservation of each key added (ParticipantDirectory) covers that moment. The
   * other participant is not named.
   */
  private requireKeyUnused(publicKey: unknown, participantId: unknown): void {
    if (typeof publicKey !== 'string') return;
    if (this.directory.list().some((p) => p.participant_id !== participantId && p.keys.some((k) => k.public_key === publicKey))) {
      throw new AcpError('CONFLICT', 'this public key is already registered to another participant', 'public_key');
    }
  }

  private admin(body: unknown, who: Identity): Body {
    const b = object(body);
    this.context.requireRole(who, 'administrator');
    return b;
  }

  private async run(type: RegistryCommand['type'], who: Identity, data: Body): Promise<{ participant: ParticipantView; events: string[] }> {
    const command = { type, ...this.context.metadata(who), data: strip(data) } as unknown as RegistryCommand;
    const { events, state } = await this.directory.execute(command);
    return { participant: view(state, command.now), events: events.map((e) => e.type) };
  }
}

type ParticipantView = ParticipantRecord & { status: ParticipantState['status'] };

/** The record as it stands at `now` (a rotation whose cool-down has passed shows as done). */
function view(state: ParticipantState, now: string): ParticipantView {
  if (state.status === 'unregistered') throw new AcpError('INTERNAL', 'participant vanished');
  return { ...settleRotation(state.participant, now), status: state.status };
}

function object(body: unknown): Body {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new AcpError('SCHEMA_VIOLATION', 'request body must be a JSON object');
  return body as Body;
}

function str(b: Body, field: string): string {
  const v = b[field];
  if (typeof v !== 'string' || v.length === 0) throw new AcpError('SCHEMA_VIOLATION', `${field} is required (a string)`, field);
  return v;
}

function optional(b: Body, field: string): string | undefined {
  const v = b[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new AcpError('SCHEMA_VIOLATION', `${field} must be a string`, field);
  return v;
}

function strip(data: Body): Body {
  return Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined));
}
