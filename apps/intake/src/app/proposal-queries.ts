import { Inject, Injectable } from '@nestjs/common';
import { AcpError, parseGetRequest, parseListRequest, Proposal, projectProposal } from '@conclave/acp-protocol';
import { ProposalStore, SERVICE_CONFIG } from '@conclave/service-kit';
import { IntakeConfig } from './intake.config';
import { ProposalIndex } from './proposal-index';

const DEFAULT_LIMIT = 50;

/** `acp.v1.get` and `acp.v1.list`. */
@Injectable()
export class ProposalQueries {
  constructor(
    private readonly store: ProposalStore,
    private readonly index: ProposalIndex,
    @Inject(SERVICE_CONFIG) private readonly config: IntakeConfig,
  ) {}

  async get(body: unknown): Promise<{ proposal: Proposal }> {
    const { proposal_id } = parseGetRequest(body);
    const { state } = await this.store.load(proposal_id);
    return { proposal: projectProposal(state) };
  }

  async list(body: unknown): Promise<{ proposals: Proposal[]; next_cursor: string | null }> {
    const request = parseListRequest(body);
    const limit = request.limit ?? DEFAULT_LIMIT;
    if (limit > this.config.listMaxLimit) {
      throw new AcpError('SCHEMA_VIOLATION', `limit must be at most ${this.config.listMaxLimit}`, 'limit');
    }
    const { ids, more } = this.index.page({ ...request, limit });
    const proposals = await Promise.all(ids.map(async (id) => projectProposal((await this.store.load(id)).state)));
    return { proposals, next_cursor: more && ids.length > 0 ? ids[ids.length - 1] : null };
  }
}
