import { Injectable } from '@nestjs/common';
import { Proposal, PROPOSAL_COMMAND_TYPES, parseEscalateRequest, projectProposal } from '@conclave/acp-protocol';
import { CommandContext, ProposalStore } from '@conclave/service-kit';

/** `acp.v1.escalate`: manual escalation by an authorized participant (RFC 10.1 item 2). */
@Injectable()
export class EscalateProposalHandler {
  constructor(
    private readonly store: ProposalStore,
    private readonly context: CommandContext,
  ) {}

  async handle(body: unknown): Promise<{ proposal: Proposal }> {
    const data = parseEscalateRequest(body);
    const result = await this.store.execute({
      type: PROPOSAL_COMMAND_TYPES.EscalateProposal,
      ...this.context.metadata(data.requested_by),
      data,
    });
    return { proposal: projectProposal(result.state) };
  }
}
