import { Injectable } from '@nestjs/common';
import { Proposal, ProposalState, projectProposal } from '@conclave/acp-protocol';
import { CommandContext, Identity } from '@conclave/service-kit';
import { ProposalLabels } from './proposal-labels';

/** A proposal as a reader may see it: with its security label, the payload withheld without clearance (14.5). */
export type ProposalForReader = Proposal & {
  classification?: string;
  payload_signature?: string;
  payload_signature_key_id?: string;
  /** Set when the reader's clearance does not cover the classification: `payload` is `{}`. */
  payload_withheld?: true;
};

@Injectable()
export class ProposalView {
  constructor(
    private readonly labels: ProposalLabels,
    private readonly context: CommandContext,
  ) {}

  async render(state: ProposalState, reader: Identity): Promise<ProposalForReader> {
    const proposal: ProposalForReader = projectProposal(state);
    const label = await this.labels.of(proposal.proposal_id);
    if (!label) return proposal;
    if (label.classification) proposal.classification = label.classification;
    if (label.payload_signature) proposal.payload_signature = label.payload_signature;
    if (label.payload_signature_key_id) proposal.payload_signature_key_id = label.payload_signature_key_id;
    if (!this.context.canRead(reader, label.classification)) {
      proposal.payload = {};
      proposal.payload_withheld = true;
      delete proposal.payload_signature;
    }
    return proposal;
  }
}
