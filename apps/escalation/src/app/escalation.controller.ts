import { Controller, UseFilters } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { okReply, PassThroughRpcExceptionFilter, PlainNatsContext } from '@conclave/messaging';
import { EscalationQueries } from './escalation-queries';
import { ESCALATION_PATTERNS } from './escalation-subjects';
import { ResolveEscalationHandler } from './resolve-escalation.handler';

/**
 * The NATS edge: `acp.v1.resolve` (DESIGN section 5; a human token in the `Authorization`
 * header, `Bearer <token>`), and the inbox queries for the CLI and tools.
 */
@Controller()
@UseFilters(PassThroughRpcExceptionFilter)
export class EscalationController {
  constructor(
    private readonly resolve: ResolveEscalationHandler,
    private readonly queries: EscalationQueries,
  ) {}

  @MessagePattern(ESCALATION_PATTERNS.resolve)
  async onResolve(@Payload() body: unknown, @Ctx() context: PlainNatsContext) {
    return okReply(await this.resolve.handle(body, context.getHeaders()?.get('Authorization') || undefined, context));
  }

  @MessagePattern(ESCALATION_PATTERNS.list)
  onList(@Payload() body: unknown) {
    return okReply(this.queries.list(isRecord(body) ? body : {}));
  }

  @MessagePattern(ESCALATION_PATTERNS.get)
  async onGet(@Payload() body: unknown) {
    return okReply(await this.queries.get(isRecord(body) ? body['proposal_id'] : undefined));
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
