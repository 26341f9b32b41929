import { Injectable } from '@nestjs/common';
import { AcpError, Proposal, ProposalState, projectProposal } from '@conclave/acp-protocol';
import { grantFor } from '@conclave/registry-protocol';
import { CommandContext } from '../command-context';
import type { Identity } from './identity';
import { ProposalLabels } from './proposal-labels';

/** A proposal as a reader may see it: with its security label, the payload withheld without clearance (14.5). */
export type ProposalForReader = Proposal & {
  classification?: string;
  payload_signature?: string;
  payload_signature_key_id?: string;
  /** Set when the reader's clearance does not cover the classification: `payload` is `{}`. */
  payload_withheld?: true;
};

/**
 * Who may read which proposal, for every service that shows proposals (intake's `get`/`list`,
 * the escalation service's HTTP API, console and NATS queries): reading needs a grant on the
 * proposal's domain (RFC 14.2, any action; cross-domain reads need their own grant) and the
 * payload is withheld from a reader whose clearance does not cover its classification (14.5).
 * With auth off every proposal is readable. The domain rule is the council's too, for its
 * evaluation read models: one rule for reading a domain. No role widens it (administrators read
 * the domains they are granted).
 */
@Injectable()
export class ProposalReadPolicy {
  constructor(
    private readonly labels: ProposalLabels,
    private readonly context: CommandContext,
  ) {}

  /** May `reader` see what is recorded in `domain` at all (its proposals, the council's read models)? */
  mayReadDomain(reader: Identity, domain: string): boolean {
    if (!this.context.authRequired) return true;
    return reader.state.status === 'active' && grantFor(reader.state.participant, domain) !== undefined;
  }

  /** FORBIDDEN (field `domain`) unless `reader` may read `domain` (mayReadDomain). */
  requireDomain(reader: Identity, domain: string): void {
    if (!this.mayReadDomain(reader, domain)) {
      throw new AcpError('FORBIDDEN', `${reader.participant_id} has no grant on ${domain}: reading needs one (RFC 14.2)`, 'domain');
    }
  }

  /** The proposal with its label, the payload withheld without clearance. */
  async render(state: ProposalState, reader: Identity): Promise<ProposalForReader> {
    const proposal: ProposalForReader = projectProposal(state);
    const label = await this.labels.of(proposal.proposal_id, state.status === 'initial' ? undefined : state.proposal);
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

  /** May `reader` read the payload of this proposal (false for a classification it does not clear)? */
  async mayReadPayload(proposalId: string, reader: Identity): Promise<boolean> {
    const label = await this.labels.of(proposalId);
    return this.context.canRead(reader, label?.classification);
  }
}
