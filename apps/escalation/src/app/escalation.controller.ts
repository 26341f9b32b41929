import { Controller, UseFilters } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { okReply, PassThroughRpcExceptionFilter, PlainNatsContext } from '@conclave/messaging';
import { EscalationReaders } from './escalation-readers';
import { ESCALATION_PATTERNS } from './escalation-subjects';
import { ResolveEscalationHandler } from './resolve-escalation.handler';

/**
 * The NATS edge: `acp.v1.resolve` (DESIGN section 5) and the inbox queries for the CLI and tools,
 * each signed by a registered participant (or carrying `Authorization: Bearer <token>` of one).
 */
@Controller()
@UseFilters(PassThroughRpcExceptionFilter)
export class EscalationController {
  constructor(
    private readonly resolve: ResolveEscalationHandler,
    private readonly readers: EscalationReaders,
  ) {}

  @MessagePattern(ESCALATION_PATTERNS.resolve)
  async onResolve(@Payload() body: unknown, @Ctx() context: PlainNatsContext) {
    return okReply(await this.resolve.handle(body, credentials(context)));
  }

  @MessagePattern(ESCALATION_PATTERNS.list)
  async onList(@Payload() body: unknown, @Ctx() context: PlainNatsContext) {
    return okReply(await this.readers.list(credentials(context), isRecord(body) ? body : {}, context.getMaxReplyBytes(), context));
  }

  @MessagePattern(ESCALATION_PATTERNS.get)
  async onGet(@Payload() body: unknown, @Ctx() context: PlainNatsContext) {
    return okReply(await this.readers.get(credentials(context), isRecord(body) ? body['proposal_id'] : undefined, context));
  }
}

function credentials(context: PlainNatsContext) {
  return { request: context, authorization: context.getHeaders()?.get('Authorization') || undefined, source: 'nats' };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
