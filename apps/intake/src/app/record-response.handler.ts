import { Injectable } from '@nestjs/common';
import { Proposal, PROPOSAL_COMMAND_TYPES, parseRespondRequest, projectProposal } from '@conclave/acp-protocol';
import { CommandContext, ProposalStore } from '@conclave/service-kit';

/** `acp.v1.respond`: an endorsement or challenge (RFC 5); the weight is computed, never taken. */
@Injectable()
export class RecordResponseHandler {
  constructor(
    private readonly store: ProposalStore,
    private readonly context: CommandContext,
  ) {}

  async handle(body: unknown): Promise<{ proposal: Proposal }> {
    const { schema_version: _version, ...data } = parseRespondRequest(body);
    const result = await this.store.execute({
      type: PROPOSAL_COMMAND_TYPES.RecordResponse,
      ...this.context.metadata(data.participant_id),
      data,
    });
    return { proposal: projectProposal(result.state) };
  }
}
