import { Controller, UseFilters } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { PassThroughRpcExceptionFilter, PlainNatsContext } from '@conclave/messaging';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { answerAuthenticated, CommandContext, Identity, RejectionRecorder } from '@conclave/service-kit';
import { RegistryCommands } from './registry-commands';

/**
 * The participant registry's NATS API (`<prefix>.v1.participants.*`): administrators register
 * participants, grant domains, rotate and revoke keys; a participant may rotate its own key and
 * read its own record. Authenticated and audited like every command.
 */
@Controller()
@UseFilters(PassThroughRpcExceptionFilter)
export class ParticipantsController {
  constructor(
    private readonly registry: RegistryCommands,
    private readonly context: CommandContext,
    private readonly rejections: RejectionRecorder,
  ) {}

  @MessagePattern(REGISTRY_PATTERNS.register)
  onRegister(@Payload() body: unknown, @Ctx() r: PlainNatsContext) {
    return this.run('participants.register', body, r, (who) => this.registry.register(body, who));
  }

  @MessagePattern(REGISTRY_PATTERNS.update)
  onUpdate(@Payload() body: unknown, @Ctx() r: PlainNatsContext) {
    return this.run('participants.update', body, r, (who) => this.registry.update(body, who));
  }

  @MessagePattern(REGISTRY_PATTERNS.rotateKey)
  onRotateKey(@Payload() body: unknown, @Ctx() r: PlainNatsContext) {
    return this.run('participants.rotate-key', body, r, (who) => this.registry.rotateKey(body, who));
  }

  @MessagePattern(REGISTRY_PATTERNS.cancelRotation)
  onCancelRotation(@Payload() body: unknown, @Ctx() r: PlainNatsContext) {
    return this.run('participants.cancel-rotation', body, r, (who) => this.registry.cancelRotation(body, who));
  }

  @MessagePattern(REGISTRY_PATTERNS.revokeKey)
  onRevokeKey(@Payload() body: unknown, @Ctx() r: PlainNatsContext) {
    return this.run('participants.revoke-key', body, r, (who) => this.registry.revokeKey(body, who));
  }

  @MessagePattern(REGISTRY_PATTERNS.grant)
  onGrant(@Payload() body: unknown, @Ctx() r: PlainNatsContext) {
    return this.run('participants.grant', body, r, (who) => this.registry.grant(body, who));
  }

  @MessagePattern(REGISTRY_PATTERNS.revokeGrant)
  onRevokeGrant(@Payload() body: unknown, @Ctx() r: PlainNatsContext) {
    return this.run('participants.revoke-grant', body, r, (who) => this.registry.revokeGrant(body, who));
  }

  @MessagePattern(REGISTRY_PATTERNS.deactivate)
  onDeactivate(@Payload() body: unknown, @Ctx() r: PlainNatsContext) {
    return this.run('participants.deactivate', body, r, (who) => this.registry.deactivate(body, who));
  }

  @MessagePattern(REGISTRY_PATTERNS.get)
  onGet(@Payload() body: unknown, @Ctx() r: PlainNatsContext) {
    return this.run('participants.get', body, r, (who) => this.registry.get(body, who));
  }

  @MessagePattern(REGISTRY_PATTERNS.list)
  onList(@Payload() body: unknown, @Ctx() r: PlainNatsContext) {
    return this.run('participants.list', body, r, async (who) => this.registry.list(who));
  }

  private run<T extends object>(command: string, body: unknown, request: PlainNatsContext, handle: (identity: Identity) => Promise<T>) {
    return answerAuthenticated({ context: this.context, rejections: this.rejections }, command, body, request, handle);
  }
}
