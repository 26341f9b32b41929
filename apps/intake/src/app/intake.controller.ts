import { Controller, UseFilters } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { ACP_COMMANDS, okReply, PassThroughRpcExceptionFilter } from '@conclave/messaging';
import { EscalateProposalHandler } from './escalate-proposal.handler';
import { ProposalQueries } from './proposal-queries';
import { RecordResponseHandler } from './record-response.handler';
import { SubmitProposalHandler } from './submit-proposal.handler';

/** The agents' NATS API (DESIGN section 5): plain JSON in, `{ok, ...}` out. */
@Controller()
@UseFilters(PassThroughRpcExceptionFilter)
export class IntakeController {
  constructor(
    private readonly submit: SubmitProposalHandler,
    private readonly respond: RecordResponseHandler,
    private readonly escalate: EscalateProposalHandler,
    private readonly queries: ProposalQueries,
  ) {}

  @MessagePattern(ACP_COMMANDS.propose)
  async onPropose(@Payload() body: unknown) {
    return okReply(await this.submit.handle(body));
  }

  @MessagePattern(ACP_COMMANDS.respond)
  async onRespond(@Payload() body: unknown) {
    return okReply(await this.respond.handle(body));
  }

  @MessagePattern(ACP_COMMANDS.escalate)
  async onEscalate(@Payload() body: unknown) {
    return okReply(await this.escalate.handle(body));
  }

  @MessagePattern(ACP_COMMANDS.get)
  async onGet(@Payload() body: unknown) {
    return okReply(await this.queries.get(body));
  }

  @MessagePattern(ACP_COMMANDS.list)
  async onList(@Payload() body: unknown) {
    return okReply(await this.queries.list(body));
  }
}
