import { Injectable } from '@nestjs/common';
import { AcpError } from '@conclave/acp-protocol';
import { ParticipantRecord, ParticipantState, REGISTRY_COMMAND_TYPES, RegistryCommand } from '@conclave/registry-protocol';
import { CommandContext, Identity, ParticipantDirectory } from '@conclave/service-kit';

type Body = Record<string, unknown>;

/** Registry commands at the edge: shape checks here, rules in the pure decider (registry-protocol). */
@Injectable()
export class RegistryCommands {
  constructor(
    private readonly directory: ParticipantDirectory,
    private readonly context: CommandContext,
  ) {}

  register(body: unknown, who: Identity) {
    const b = this.admin(body, who);
    return this.run(REGISTRY_COMMAND_TYPES.RegisterParticipant, who, {
      participant_id: str(b, 'participant_id'),
      roles: b['roles'],
      public_key: str(b, 'public_key'),
      clearance: optional(b, 'clearance'),
      display_name: optional(b, 'display_name'),
    });
  }

  update(body: unknown, who: Identity) {
    const b = this.admin(body, who);
    return this.run(REGISTRY_COMMAND_TYPES.UpdateParticipant, who, {
      participant_id: str(b, 'participant_id'),
      roles: b['roles'],
      clearance: optional(b, 'clearance'),
      display_name: optional(b, 'display_name'),
    });
  }

  /** An administrator, or the participant itself (signed with its current key). */
  rotateKey(body: unknown, who: Identity) {
    const b = object(body);
    if (str(b, 'participant_id') !== who.participant_id) this.context.requireRole(who, 'administrator');
    return this.run(REGISTRY_COMMAND_TYPES.RotateKey, who, { participant_id: str(b, 'participant_id'), public_key: str(b, 'public_key') });
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
    return { participant: view(state) };
  }

  list(who: Identity): { participants: ParticipantRecord[] } {
    this.context.requireRole(who, 'administrator');
    return { participants: this.directory.list() };
  }

  private admin(body: unknown, who: Identity): Body {
    const b = object(body);
    this.context.requireRole(who, 'administrator');
    return b;
  }

  private async run(type: RegistryCommand['type'], who: Identity, data: Body): Promise<{ participant: ParticipantView; events: string[] }> {
    const command = { type, ...this.context.metadata(who), data: strip(data) } as unknown as RegistryCommand;
    const { events, state } = await this.directory.execute(command);
    return { participant: view(state), events: events.map((e) => e.type) };
  }
}

type ParticipantView = ParticipantRecord & { status: ParticipantState['status'] };

function view(state: ParticipantState): ParticipantView {
  if (state.status === 'unregistered') throw new AcpError('INTERNAL', 'participant vanished');
  return { ...state.participant, status: state.status };
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
