import { Injectable } from '@nestjs/common';
import { AcpError, isDomain, isUlid, Proposal, projectProposal } from '@conclave/acp-protocol';
import { ProposalStore } from '@conclave/service-kit';
import { EscalationInbox, InboxEntry, InboxFilter } from './escalation-inbox';
import { payloadHash } from './payload-hash';

const STATUSES = ['open', 'resolved', 'expired', 'all'] as const;
const MAX_LIMIT = 500;

export interface EscalationDetail {
  escalation: InboxEntry;
  /** The proposal with every response, its weight and reason. */
  proposal: Proposal;
  /** Totals of the recorded responses (what the escalation was decided on). */
  votes: { for: number; against: number; responses: number };
  /** What a resolution must carry to bind itself to this escalation. */
  binding: { escalation_id: string; payload_hash: string };
}

/** Reading the inbox: the list, and one escalation with its proposal (HTTP, NATS, console, CLI). */
@Injectable()
export class EscalationQueries {
  constructor(
    private readonly inbox: EscalationInbox,
    private readonly store: ProposalStore,
  ) {}

  list(query: Record<string, unknown>): { escalations: InboxEntry[] } {
    const filter: InboxFilter = {};
    const status = query['status'];
    if (status !== undefined) {
      if (!(STATUSES as readonly unknown[]).includes(status)) throw new AcpError('SCHEMA_VIOLATION', `status must be one of ${STATUSES.join(', ')}`, 'status');
      filter.status = status as InboxFilter['status'];
    }
    const domain = query['domain'];
    if (domain !== undefined) {
      if (!isDomain(domain)) throw new AcpError('SCHEMA_VIOLATION', 'domain must be a domain such as risk.credit', 'domain');
      filter.domain = domain;
    }
    const assignee = query['assignee'];
    if (assignee !== undefined) {
      if (typeof assignee !== 'string' || assignee.length === 0) throw new AcpError('SCHEMA_VIOLATION', 'assignee must be a name', 'assignee');
      filter.assignee = assignee;
    }
    let limit = MAX_LIMIT;
    if (query['limit'] !== undefined) {
      limit = Number(query['limit']);
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new AcpError('SCHEMA_VIOLATION', `limit must be an integer from 1 to ${MAX_LIMIT}`, 'limit');
    }
    return { escalations: this.inbox.list(filter).slice(0, limit) };
  }

  async get(proposalId: unknown): Promise<EscalationDetail> {
    if (!isUlid(proposalId)) throw new AcpError('INVALID_ID', 'proposal_id must be a ULID', 'proposal_id');
    const escalation = this.inbox.get(proposalId);
    const { state } = await this.store.load(proposalId);
    if (state.status === 'initial') throw new AcpError('PROPOSAL_NOT_FOUND', `proposal ${proposalId} does not exist`, 'proposal_id');
    if (!escalation) throw new AcpError('NOT_ESCALATED', `proposal ${proposalId} has not been escalated`, 'proposal_id');
    const proposal = projectProposal(state);
    return {
      escalation,
      proposal,
      // The totals the escalation was decided on (exact decimals, reported as numbers, DESIGN 2).
      votes: { for: escalation.votes_for, against: escalation.votes_against, responses: proposal.responses.length },
      binding: { escalation_id: escalation.escalation_id, payload_hash: escalation.payload_hash ?? state.proposal.payload_hash ?? payloadHash(state.proposal.payload) },
    };
  }
}
