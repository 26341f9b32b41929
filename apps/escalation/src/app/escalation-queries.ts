import { Injectable } from '@nestjs/common';
import { AcpError, foldProposal, isDomain, isUlid } from '@conclave/acp-protocol';
import { takeWithinBytes } from '@conclave/messaging';
import { Identity, ProposalForReader, ProposalReadPolicy, ProposalStore } from '@conclave/service-kit';
import { EscalationInbox, InboxEntry, InboxFilter, inboxEntryOf } from './escalation-inbox';
import { payloadHash } from './payload-hash';

const STATUSES = ['open', 'resolved', 'expired', 'all'] as const;
const MAX_LIMIT = 500;

/** A number sent as a number or (HTTP query) a string; anything else is NaN, never coerced (`Number({toString: 1})` throws). */
function numberOf(v: unknown): number {
  if (typeof v === 'number') return v;
  return typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
}

export interface EscalationDetail {
  escalation: InboxEntry;
  /** The proposal with every response, its weight and reason (payload withheld without clearance). */
  proposal: ProposalForReader;
  /** Totals of the recorded responses (what the escalation was decided on). */
  votes: { for: number; against: number; responses: number };
  /** What a resolution must carry to bind itself to this escalation. */
  binding: { escalation_id: string; payload_hash: string };
}

export interface EscalationPage {
  escalations: InboxEntry[];
  /** Pass as `cursor` for the next page; null at the end. */
  next_cursor: string | null;
}

/**
 * Reading the inbox: the list, and one escalation with its proposal (HTTP, NATS, console, CLI),
 * for an identified reader only: escalations of domains it has no grant on are left out of a
 * list and FORBIDDEN to read, and a payload it does not clear is withheld, exactly as intake's
 * `get` and `list` do (ProposalReadPolicy). A page stops at `limit` and at `maxReplyBytes`.
 */
@Injectable()
export class EscalationQueries {
  constructor(
    private readonly inbox: EscalationInbox,
    private readonly store: ProposalStore,
    private readonly policy: ProposalReadPolicy,
  ) {}

  list(
    query: Record<string, unknown>,
    reader: Identity,
    maxReplyBytes = Number.MAX_SAFE_INTEGER,
  ): { page: EscalationPage; omitted: string[] } {
    const filter: InboxFilter = {};
    const status = query['status'];
    if (status !== undefined) {
      if (!(STATUSES as readonly unknown[]).includes(status))
        throw new AcpError('SCHEMA_VIOLATION', `status must be one of ${STATUSES.join(', ')}`, 'status');
      filter.status = status as InboxFilter['status'];
    }
    const domain = query['domain'];
    if (domain !== undefined) {
      if (!isDomain(domain)) throw new AcpError('SCHEMA_VIOLATION', 'domain must be a domain such as risk.credit', 'domain');
      filter.domain = domain;
    }
    const assignee = query['assignee'];
    if (assignee !== undefined) {
      if (typeof assignee !== 'string' || assignee.length === 0)
        throw new AcpError('SCHEMA_VIOLATION', 'assignee must be a name', 'assignee');
      filter.assignee = assignee;
    }
    let limit = MAX_LIMIT;
    if (query['limit'] !== undefined) {
      limit = numberOf(query['limit']);
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT)
        throw new AcpError('SCHEMA_VIOLATION', `limit must be an integer from 1 to ${MAX_LIMIT}`, 'limit');
    }
    let offset = 0;
    if (query['cursor'] !== undefined) {
      offset = numberOf(query['cursor']);
      if (!Number.isSafeInteger(offset) || offset < 0)
        throw new AcpError('SCHEMA_VIOLATION', 'cursor must be a next_cursor of an earlier page', 'cursor');
    }
    const all = this.inbox.list(filter);
    const omitted: string[] = [];
    const visible: InboxEntry[] = [];
    let i = offset;
    for (; i < all.length && visible.length < limit; i++) {
      if (this.policy.mayReadDomain(reader, all[i].domain)) visible.push(all[i]);
      else if (!omitted.includes(all[i].domain)) omitted.push(all[i].domain);
    }
    const fitted = takeWithinBytes(visible, maxReplyBytes);
    // Resume after the last entry shown (a cut by size) or examined.
    const end = fitted.truncated ? all.indexOf(fitted.items[fitted.items.length - 1]) + 1 : i;
    return { page: { escalations: fitted.items, next_cursor: end < all.length ? String(end) : null }, omitted };
  }

  /**
   * One escalation as the log has it now, not as this replica's inbox has read it so far: a human
   * following a link to an escalation just made, answered by a replica whose inbox lags, is shown
   * it, never NOT_ESCALATED. So the proposal and its entry are both folded from one read of the
   * proposal's own stream.
   */
  async get(proposalId: unknown, reader: Identity): Promise<EscalationDetail> {
    if (!isUlid(proposalId)) throw new AcpError('INVALID_ID', 'proposal_id must be a ULID', 'proposal_id');
    const events = await this.store.read(proposalId);
    const state = foldProposal(events);
    if (state.status === 'initial') throw new AcpError('PROPOSAL_NOT_FOUND', `proposal ${proposalId} does not exist`, 'proposal_id');
    this.policy.requireDomain(reader, state.proposal.domain);
    const escalation = inboxEntryOf(events);
    if (!escalation) throw new AcpError('NOT_ESCALATED', `proposal ${proposalId} has not been escalated`, 'proposal_id');
    const proposal = await this.policy.render(state, reader);
    return {
      escalation,
      proposal,
      // The totals the escalation was decided on (exact decimals, reported as numbers, DESIGN 2).
      votes: { for: escalation.votes_for, against: escalation.votes_against, responses: proposal.responses.length },
      binding: {
        escalation_id: escalation.escalation_id,
        payload_hash: escalation.payload_hash ?? state.proposal.payload_hash ?? payloadHash(state.proposal.payload),
      },
    };
  }
}
