import { Controller, UseFilters } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { AcpError } from '@conclave/acp-protocol';
import { ACP_COMMANDS, checkTextLengths, okReply, PassThroughRpcExceptionFilter, PlainNatsContext, TEXT_LIMITS } from '@conclave/messaging';
import { CommandContext, Identity, RejectionRecorder } from '@conclave/service-kit';
import { EscalateProposalHandler } from './escalate-proposal.handler';
import { LineageQueries } from './lineage-queries';
import { ProposalQueries, ReadDenials } from './proposal-queries';
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
    private readonly lineages: LineageQueries,
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
      if (reply.proposal.payload_withheld) {
        const denial = new AcpError(
          'FORBIDDEN',
          `payload withheld: ${who.participant_id}'s clearance does not cover ${reply.proposal.classification}`,
          'classification',
        );
        await this.rejections.record('get', request, { proposal_id: reply.proposal.proposal_id }, denial, who);
      }
      return reply;
    });
  }

  @MessagePattern(ACP_COMMANDS.lineage)
  onLineage(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('lineage', body, request, undefined, (who) => this.lineages.lineage(body, who));
  }

  @MessagePattern(ACP_COMMANDS.list)
  onList(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('list', body, request, undefined, async (who) => {
      const { reply, denials } = await this.queries.list(body, who, request.getMaxReplyBytes());
      await this.recordListDenials(request, body, denials, who);
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
      checkTextLengths(body, BOUNDED_FIELDS);
      return okReply(await handle(identity));
    } catch (err) {
      if (err instanceof AcpError) await this.rejections.record(command, request, body, err, identity);
      throw err;
    }
  }

  /** One audit entry per `list` that left proposals out or withheld payloads, however many. */
  private async recordListDenials(request: PlainNatsContext, body: unknown, denials: ReadDenials, reader: Identity): Promise<void> {
    if (denials.omitted === 0 && denials.withheld.length === 0) return;
    const parts: string[] = [];
    if (denials.omitted > 0)
      parts.push(`${denials.omitted} proposal(s) left out: no grant on ${denials.omittedDomains.slice(0, 10).join(', ')}`);
    if (denials.withheld.length > 0)
      parts.push(`${denials.withheld.length} payload(s) withheld by clearance: ${denials.withheld.slice(0, 10).join(', ')}`);
    const only = denials.omitted === 0 && denials.withheld.length === 1 ? denials.withheld[0] : undefined;
    const denial = new AcpError(
      'FORBIDDEN',
      `${reader.participant_id}: ${parts.join('; ')}`,
      denials.omitted > 0 ? 'domain' : 'classification',
    );
    await this.rejections.record(
      'list',
      request,
      { ...(typeof body === 'object' && body !== null ? body : {}), proposal_id: only },
      denial,
      reader,
    );
  }
}

/** Ids and free text a command may carry, bounded before anything is stored (reasons, ids). */
const BOUNDED_FIELDS: Record<string, number> = {
  proposal_id: TEXT_LIMITS.id,
  author: TEXT_LIMITS.id,
  participant_id: TEXT_LIMITS.id,
  requested_by: TEXT_LIMITS.id,
  reason: TEXT_LIMITS.text,
  cursor: TEXT_LIMITS.id,
};

function declaredBy(body: unknown, field: string): string | undefined {
  const v = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[field] : undefined;
  return typeof v === 'string' ? v : undefined;
}
