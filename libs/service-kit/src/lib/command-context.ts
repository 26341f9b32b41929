import { Inject, Injectable } from '@nestjs/common';
import { AcpError, CommandMetadata } from '@conclave/acp-protocol';
import type { Clock, IdGenerator } from './runtime';
import { ServiceConfig } from './service-config';
import { CLOCK, IDS, SERVICE_CONFIG } from './tokens';

/**
 * Stamps what the edge owns on every command: a fresh command id, `now` from the clock, and the
 * acting identity. Authentication (RFC 14.1) plugs in here: with CONCLAVE_AUTH_MODE=off the
 * identity the body declares is taken as is; `required` has no verifier yet (security issue),
 * so it refuses every command rather than pretend.
 */
@Injectable()
export class CommandContext {
  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(IDS) private readonly ids: IdGenerator,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
  ) {}

  now(): string {
    return this.clock.now().toISOString();
  }

  newId(): string {
    return this.ids.next();
  }

  metadata(declaredActor: string): CommandMetadata {
    return { command_id: this.ids.next(), now: this.now(), actor: this.authenticate(declaredActor) };
  }

  private authenticate(declaredActor: string): string {
    if (this.config.authMode === 'off') return declaredActor;
    throw new AcpError(
      'UNAUTHENTICATED',
      'this deployment requires authentication, which is not available yet; run with CONCLAVE_AUTH_MODE=off',
    );
  }
}
