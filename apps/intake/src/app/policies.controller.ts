import { Controller, UseFilters } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { AcpError, isDomain, parseDomainPolicy, POLICY_PATTERNS } from '@conclave/acp-protocol';
import { PassThroughRpcExceptionFilter, PlainNatsContext } from '@conclave/messaging';
import { answerAuthenticated, CommandContext, Identity, RejectionRecorder } from '@conclave/service-kit';
import { DomainPolicies } from './domain-policies';

/**
 * The domains' policy documents through the registry API (`<prefix>.v1.policies.*`):
 * administrators set a new version (`{policy}`), anyone authenticated reads the document that
 * governs a domain, or one version of a domain's own. Authenticated and audited like every command.
 */
@Controller()
@UseFilters(PassThroughRpcExceptionFilter)
export class PoliciesController {
  constructor(
    private readonly policies: DomainPolicies,
    private readonly context: CommandContext,
    private readonly rejections: RejectionRecorder,
  ) {}

  @MessagePattern(POLICY_PATTERNS.set)
  onSet(@Payload() body: unknown, @Ctx() r: PlainNatsContext) {
    return this.run('policies.set', body, r, async (who) => {
      this.context.requireRole(who, 'administrator');
      const document = parseDomainPolicy(field(body, 'policy'));
      return { policy: await this.policies.set(document, this.context.metadata(who)) };
    });
  }

  @MessagePattern(POLICY_PATTERNS.get)
  onGet(@Payload() body: unknown, @Ctx() r: PlainNatsContext) {
    return this.run('policies.get', body, r, async () => {
      const domain = field(body, 'domain');
      if (!isDomain(domain)) throw new AcpError('SCHEMA_VIOLATION', 'domain must be a domain name', 'domain');
      const version = field(body, 'version');
      if (version !== undefined && (!Number.isSafeInteger(version) || (version as number) < 1)) {
        throw new AcpError('SCHEMA_VIOLATION', 'version must be an integer >= 1', 'version');
      }
      if (version !== undefined) return { policy: await this.policies.get(domain, version as number) };
      return { policy: await this.policies.get(domain), governing: (await this.policies.governing(domain)) ?? null };
    });
  }

  private run<T extends object>(command: string, body: unknown, request: PlainNatsContext, handle: (identity: Identity) => Promise<T>) {
    return answerAuthenticated({ context: this.context, rejections: this.rejections }, command, body, request, handle);
  }
}

function field(body: unknown, name: string): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new AcpError('SCHEMA_VIOLATION', 'the body must be a JSON object', '');
  return (body as Record<string, unknown>)[name];
}
