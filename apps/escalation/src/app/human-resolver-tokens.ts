import { Inject, Injectable } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import { AcpError, CommandMetadata } from '@conclave/acp-protocol';
import { CommandContext, SERVICE_CONFIG } from '@conclave/service-kit';
import { ESCALATION_SETTINGS, EscalationConfig, EscalationSettings } from './escalation.config';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Who a human resolution comes from (issue 5 item 8), until the participant registry of the
 * security issue replaces it: a configured token per human resolver, presented as
 * `Authorization: Bearer <token>` on HTTP and as the same NATS header on `acp.v1.resolve`.
 * With CONCLAVE_AUTH_MODE=required a valid token is mandatory and the resolution is recorded
 * under its human; with `off`, the declared `resolved_by` is taken (a presented token is still
 * checked when tokens are configured). This class is the seam: `authenticate` becomes a registry
 * lookup, `metadata` the CommandContext's own once it verifies identities.
 */
@Injectable()
export class HumanResolverTokens {
  private readonly tokens: Array<{ digest: Buffer; human: string }>;

  constructor(
    @Inject(ESCALATION_SETTINGS) settings: EscalationSettings,
    @Inject(SERVICE_CONFIG) private readonly config: EscalationConfig,
    private readonly context: CommandContext,
  ) {
    this.tokens = [...settings.humanTokens].map(([token, human]) => ({ digest: digest(token), human }));
  }

  get required(): boolean {
    return this.config.authMode === 'required';
  }

  /** The human id from an `Authorization` value (`Bearer <token>`), or the declared one where allowed. */
  authenticate(authorization: string | undefined, declared: string | undefined): string {
    const token = bearer(authorization);
    const checkToken = this.required || (token !== undefined && this.tokens.length > 0);
    if (!checkToken) {
      if (!declared) throw new AcpError('SCHEMA_VIOLATION', 'resolved_by is required', 'resolved_by');
      return declared;
    }
    if (token === undefined) {
      throw new AcpError('UNAUTHENTICATED', 'a human resolver token is required (Authorization: Bearer <token>)');
    }
    const presented = digest(token);
    // Compare with every configured token, in constant time for each.
    let human: string | undefined;
    for (const t of this.tokens) if (timingSafeEqual(t.digest, presented)) human = t.human;
    if (human === undefined) throw new AcpError('UNAUTHENTICATED', 'the token is not a human resolver token of this deployment');
    if (declared !== undefined && declared !== human) {
      throw new AcpError('FORBIDDEN', `this token belongs to ${human}, who cannot resolve as ${declared}`, 'resolved_by');
    }
    return human;
  }

  /** Command metadata for an authenticated human. */
  metadata(human: string): CommandMetadata {
    // With auth off, CommandContext takes the declared identity as is. With auth required, the
    // token above is what authenticated the human; CommandContext has no verifier for humans yet.
    if (!this.required) return this.context.metadata(human);
    return { command_id: this.context.newId(), now: this.context.now(), actor: human };
  }
}

function bearer(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return m ? m[1] : undefined;
}
