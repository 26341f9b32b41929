import { Injectable } from '@nestjs/common';
import { Proposal, PROPOSAL_COMMAND_TYPES, parseProposeRequest, projectProposal } from '@conclave/acp-protocol';
import { CommandContext, ProposalStore } from '@conclave/service-kit';

/** `acp.v1.propose`: validate, assign the id if absent, submit (RFC 3.1 Submit, 4.3, 14.4). */
@Injectable()
export class SubmitProposalHandler {
  constructor(
    private readonly store: ProposalStore,
    private readonly context: CommandContext,
  ) {}

  async handle(body: unknown): Promise<{ proposal: Proposal }> {
    const request = parseProposeRequest(body);
    const { schema_version: _version, ...data } = request;
    const result = await this.store.execute({
      type: PROPOSAL_COMMAND_TYPES.SubmitProposal,
      ...this.context.metadata(request.author),
      data: { ...data, proposal_id: request.proposal_id ?? this.context.newId() },
    });
    return { proposal: projectProposal(result.state) };
  }
}
