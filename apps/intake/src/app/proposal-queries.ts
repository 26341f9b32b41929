import { Inject, Injectable } from '@nestjs/common';
import { AcpError, parseGetRequest, parseListRequest } from '@conclave/acp-protocol';
import { DEFAULT_MAX_REPLY_BYTES, takeWithinBytes } from '@conclave/messaging';
import { Identity, ProposalStore, SERVICE_CONFIG } from '@conclave/service-kit';
import { IntakeConfig } from './intake.config';
import { ProposalIndex } from './proposal-index';
import { ProposalForReader, ProposalView } from './proposal-view';

const DEFAULT_LIMIT = 50;
/** How many index entries one `list` examines at most, whatever the reader may see (bounded work). */
const SCAN_FACTOR = 4;

/** What a page left out of a reader's view: the edge records it as one audit entry per request. */
export interface ReadDenials {
  /** Proposals of domains the reader has no grant on (omitted). */
  omitted: number;
  omittedDomains: string[];
  /** Proposals shown with `payload_withheld` (clearance). */
  withheld: string[];
}

/**
 * `acp.v1.get` and `acp.v1.list`: reading needs a grant on the proposal's domain (RFC 14.2; `get`
 * is FORBIDDEN without one, `list` leaves such proposals out) and the payload of a proposal whose
 * classification the reader does not clear is withheld (14.5). A page holds at most `limit`
 * proposals and at most what fits in one reply (max_payload); follow `next_cursor` until null
 * (a page can be shorter than `limit`, even empty, with a cursor).
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
    if (state.status === 'initial') throw new AcpError('PROPOSAL_NOT_FOUND', `proposal ${proposal_id} does not exist`, 'proposal_id');
    this.view.requireDomain(reader, state.proposal.domain);
    return { proposal: await this.view.render(state, reader) };
  }

  async list(
    body: unknown,
    reader: Identity,
    maxReplyBytes = DEFAULT_MAX_REPLY_BYTES,
  ): Promise<{ reply: { proposals: ProposalForReader[]; next_cursor: string | null }; denials: ReadDenials }> {
    const request = parseListRequest(body);
    const limit = request.limit ?? DEFAULT_LIMIT;
    if (limit > this.config.listMaxLimit) {
      throw new AcpError('SCHEMA_VIOLATION', `limit must be at most ${this.config.listMaxLimit}`, 'limit');
    }
    const { ids, more } = this.index.page({ ...request, limit: limit * SCAN_FACTOR });
    const denials: ReadDenials = { omitted: 0, omittedDomains: [], withheld: [] };
    const visible: Array<{ id: string; proposal: ProposalForReader }> = [];
    let scanned = 0;
    for (const id of ids) {
      if (visible.length === limit) break;
      scanned++;
      const { state } = await this.store.load(id);
      if (state.status === 'initial') continue;
      if (!this.view.mayReadDomain(reader, state.proposal.domain)) {
        denials.omitted++;
        if (!denials.omittedDomains.includes(state.proposal.domain)) denials.omittedDomains.push(state.proposal.domain);
        continue;
      }
      visible.push({ id, proposal: await this.view.render(state, reader) });
    }
    const fitted = takeWithinBytes(
      visible.map((v) => v.proposal),
      maxReplyBytes,
    );
    const proposals = fitted.items;
    denials.withheld = proposals.filter((p) => p.payload_withheld).map((p) => p.proposal_id);
    // The cursor is the last id examined (or shown, when the reply was cut by size).
    const lastId = fitted.truncated ? visible[proposals.length - 1].id : ids[scanned - 1];
    const unfinished = fitted.truncated || scanned < ids.length || more;
    return { reply: { proposals, next_cursor: unfinished && lastId !== undefined ? lastId : null }, denials };
  }
}
