import { Controller, UseFilters } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { AcpError } from '@conclave/acp-protocol';
import { ACP_COMMANDS, okReply, PassThroughRpcExceptionFilter, PlainNatsContext } from '@conclave/messaging';
import { CommandContext, Identity, RejectionRecorder } from '@conclave/service-kit';
import { EscalateProposalHandler } from './escalate-proposal.handler';
import { ProposalQueries } from './proposal-queries';
import type { ProposalForReader } from './proposal-view';
import { RecordResponseHandler } from './record-response.handler';
import { SubmitProposalHandler } from './submit-proposal.handler';

/**
 * The agents' NATS API (DESIGN section 5): plain JSON in, `{ok, ...}` out. Every command is
 * authenticated first (CommandContext); every refusal is recorded for the audit log
 * (RejectionRecorder), and so is every payload withheld from a reader without clearance.
 */
@Controller()
@UseFilters(PassThroughRpcExceptionFilter)
export class IntakeController {
  constructor(
    private readonly submit: SubmitProposalHandler,
    private readonly respond: RecordResponseHandler,
    private readonly escalate: EscalateProposalHandler,
    private readonly queries: ProposalQueries,
    private readonly context: CommandContext,
    private readonly rejections: RejectionRecorder,
  ) {}

  @MessagePattern(ACP_COMMANDS.propose)
  onPropose(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('propose', body, request, 'author', (who) => this.submit.handle(body, who));
  }

  @MessagePattern(ACP_COMMANDS.respond)
  onRespond(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('respond', body, request, 'participant_id', (who) => this.respond.handle(body, who));
  }

  @MessagePattern(ACP_COMMANDS.escalate)
  onEscalate(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('escalate', body, request, 'requested_by', (who) => this.escalate.handle(body, who));
  }

  @MessagePattern(ACP_COMMANDS.get)
  onGet(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('get', body, request, undefined, async (who) => {
      const reply = await this.queries.get(body, who);
      await this.recordWithheld('get', request, [reply.proposal], who);
      return reply;
    });
  }

  @MessagePattern(ACP_COMMANDS.list)
  onList(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('list', body, request, undefined, async (who) => {
      const reply = await this.queries.list(body, who);
      await this.recordWithheld('list', request, reply.proposals, who);
      return reply;
    });
  }

  private async run<T extends object>(
    command: string,
    body: unknown,
    request: PlainNatsContext,
    declaringField: string | undefined,
    handle: (identity: Identity) => Promise<T>,
  ) {
    let identity: Identity | undefined;
    try {
      identity = await this.context.authenticate(request, declaringField ? declaredBy(body, declaringField) : undefined);
      return okReply(await handle(identity));
    } catch (err) {
      if (err instanceof AcpError) await this.rejections.record(command, request, body, err, identity);
      throw err;
    }
  }

  private async recordWithheld(command: string, request: PlainNatsContext, proposals: ProposalForReader[], reader: Identity): Promise<void> {
    for (const p of proposals.filter((x) => x.payload_withheld)) {
      const denial = new AcpError('FORBIDDEN', `payload withheld: ${reader.participant_id}'s clearance does not cover ${p.classification}`, 'classification');
      await this.rejections.record(command, request, { proposal_id: p.proposal_id }, denial, reader);
    }
  }
}

function declaredBy(body: unknown, field: string): string | undefined {
  const v = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[field] : undefined;
  return typeof v === 'string' ? v : undefined;
}
