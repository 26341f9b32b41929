import { Injectable } from '@nestjs/common';
import { PROPOSAL_COMMAND_TYPES, parseEscalateRequest, projectProposal } from '@conclave/acp-protocol';
import { CommandContext, Identity, ProposalStore } from '@conclave/service-kit';
import { ProposalForReader, ProposalView } from './proposal-view';

/** `acp.v1.escalate`: manual escalation (RFC 10.1 item 2) by a participant with the escalate grant for the domain (14.2). */
@Injectable()
export class EscalateProposalHandler {
  constructor(
    private readonly store: ProposalStore,
    private readonly context: CommandContext,
    private readonly view: ProposalView,
  ) {}

  async handle(body: unknown, identity: Identity): Promise<{ proposal: ProposalForReader }> {
    const data = parseEscalateRequest(body);
    const requester = await this.context.actAs(identity, data.requested_by, 'requested_by');
    const loaded = await this.store.load(data.proposal_id, 'cache');
    this.context.authorize(requester, 'escalate', projectProposal(loaded.state).domain);
    const result = await this.store.execute(
      {
        type: PROPOSAL_COMMAND_TYPES.EscalateProposal,
        ...this.context.metadata(requester),
        data,
      },
      loaded,
    );
    return { proposal: await this.view.render(result.state, requester) };
  }
}
