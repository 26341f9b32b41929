import { Inject, Injectable } from '@nestjs/common';
import { AcpError, parseGetRequest, parseListRequest } from '@conclave/acp-protocol';
import { Identity, ProposalStore, SERVICE_CONFIG } from '@conclave/service-kit';
import { IntakeConfig } from './intake.config';
import { ProposalIndex } from './proposal-index';
import { ProposalForReader, ProposalView } from './proposal-view';

const DEFAULT_LIMIT = 50;

/**
 * `acp.v1.get` and `acp.v1.list`, for any authenticated participant; the payload of a proposal
 * whose classification the reader does not clear is withheld (14.5), and `withheld` lists
 * those proposals so that the edge can record the denial for the audit log.
 */
@Injectable()
export class ProposalQueries {
  constructor(
    private readonly store: ProposalStore,
    private readonly index: ProposalIndex,
    private readonly view: ProposalView,
    @Inject(SERVICE_CONFIG) private readonly config: IntakeConfig,
  ) {}

  async get(body: unknown, reader: Identity): Promise<{ proposal: ProposalForReader }> {
    const { proposal_id } = parseGetRequest(body);
    const { state } = await this.store.load(proposal_id);
    return { proposal: await this.view.render(state, reader) };
  }

  async list(body: unknown, reader: Identity): Promise<{ proposals: ProposalForReader[]; next_cursor: string | null }> {
    const request = parseListRequest(body);
    const limit = request.limit ?? DEFAULT_LIMIT;
    if (limit > this.config.listMaxLimit) {
      throw new AcpError('SCHEMA_VIOLATION', `limit must be at most ${this.config.listMaxLimit}`, 'limit');
    }
    const { ids, more } = this.index.page({ ...request, limit });
    const proposals = await Promise.all(ids.map(async (id) => this.view.render((await this.store.load(id)).state, reader)));
    return { proposals, next_cursor: more && ids.length > 0 ? ids[ids.length - 1] : null };
  }
}
