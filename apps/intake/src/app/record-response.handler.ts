import { Injectable } from '@nestjs/common';
import { AcpError, PROPOSAL_COMMAND_TYPES, parseRespondRequest, projectProposal } from '@conclave/acp-protocol';
import { CommandContext, Identity, ProposalStore } from '@conclave/service-kit';
import { ProposalLabels } from './proposal-labels';
import { ProposalForReader, ProposalView } from './proposal-view';

export interface StampedFactors {
  domain_authority: number;
  trust_score: number;
  /** `registry`: stamped from the participant's grant; `declared`: taken as the response declared them (open mode or auth off). */
  source: 'registry' | 'declared';
}

/**
 * `acp.v1.respond`: an endorsement or challenge (RFC 5). The respondent must hold a grant for
 * the proposal's domain (14.2) and clear its classification (14.5). The weight is computed,
 * never taken; its factors come from the registry (DESIGN 6): a response declaring other values
 * is FORBIDDEN, naming the field. In the open mode (CONCLAVE_RESPONSE_FACTORS=declared, or auth
 * off) declared values are taken, and the reply's `factors.source` says `declared`.
 */
@Injectable()
export class RecordResponseHandler {
  constructor(
    private readonly store: ProposalStore,
    private readonly context: CommandContext,
    private readonly labels: ProposalLabels,
    private readonly view: ProposalView,
  ) {}

  async handle(body: unknown, identity: Identity): Promise<{ proposal: ProposalForReader; factors: StampedFactors }> {
    const { schema_version: _version, domain_authority, trust_score, ...data } = parseRespondRequest(body);
    const respondent = await this.context.actAs(identity, data.participant_id, 'participant_id');
    const loaded = await this.store.load(data.proposal_id, 'cache');
    const domain = projectProposal(loaded.state).domain;
    const grant = this.context.authorize(respondent, 'respond', domain);
    const label = await this.labels.of(data.proposal_id, loaded.state.status === 'initial' ? undefined : loaded.state.proposal);
    if (!this.context.canRead(respondent, label?.classification)) {
      throw new AcpError(
        'FORBIDDEN',
        `${respondent.participant_id}'s clearance does not cover this ${label?.classification} proposal`,
        'proposal_id',
      );
    }
    const factors = this.factors(grant, domain_authority, trust_score);
    const result = await this.store.execute(
      {
        type: PROPOSAL_COMMAND_TYPES.RecordResponse,
        ...this.context.metadata(respondent),
        data: { ...data, domain_authority: factors.domain_authority, trust_score: factors.trust_score },
      },
      loaded,
    );
    return { proposal: await this.view.render(result.state, respondent), factors };
  }

  private factors(
    grant: { domain_authority: number; trust_score: number } | undefined,
    declaredAuthority: number | undefined,
    declaredTrust: number | undefined,
  ): StampedFactors {
    if (this.context.responseFactors === 'declared') {
      const domain_authority = declaredAuthority ?? grant?.domain_authority;
      const trust_score = declaredTrust ?? grant?.trust_score;
      if (domain_authority === undefined)
        throw new AcpError(
          'SCHEMA_VIOLATION',
          'domain_authority is required: the participant has no registry grant for this domain',
          'domain_authority',
        );
      if (trust_score === undefined)
        throw new AcpError(
          'SCHEMA_VIOLATION',
          'trust_score is required: the participant has no registry grant for this domain',
          'trust_score',
        );
      const fromRegistry = declaredAuthority === undefined && declaredTrust === undefined;
      return { domain_authority, trust_score, source: fromRegistry ? 'registry' : 'declared' };
    }
    // authorize() refused already when there is no grant.
    const registry = grant as { domain_authority: number; trust_score: number };
    if (declaredAuthority !== undefined && declaredAuthority !== registry.domain_authority) {
      throw new AcpError(
        'FORBIDDEN',
        `domain_authority ${declaredAuthority} is not the registry's ${registry.domain_authority} for this domain; leave it out`,
        'domain_authority',
      );
    }
    if (declaredTrust !== undefined && declaredTrust !== registry.trust_score) {
      throw new AcpError(
        'FORBIDDEN',
        `trust_score ${declaredTrust} is not the registry's ${registry.trust_score} for this domain; leave it out`,
        'trust_score',
      );
    }
    return { domain_authority: registry.domain_authority, trust_score: registry.trust_score, source: 'registry' };
  }
}
