import { Injectable } from '@nestjs/common';
import { AcpError } from '@conclave/acp-protocol';
import { CommandRequest, Identity, RejectionRecorder } from '@conclave/service-kit';
import { EscalationDetail, EscalationPage, EscalationQueries } from './escalation-queries';
import { HumanCredentials, HumanResolverTokens } from './human-resolver-tokens';

/** A request as RejectionRecorder records it, for the HTTP API (no NATS subject or headers). */
export function httpRequest(method: string, path: string, body: unknown): CommandRequest {
  const raw = new TextEncoder().encode(body === undefined ? '' : JSON.stringify(body));
  return { getSubject: () => `http:${method} ${path}`.slice(0, 256), getRawBody: () => raw, getHeaders: () => undefined };
}

/**
 * The reads of the escalation service, on every channel: identify the reader (or refuse), read
 * through EscalationQueries, and record for the audit log each refusal, each withheld payload
 * and, once per list, the escalations left out for want of a grant.
 */
@Injectable()
export class EscalationReaders {
  constructor(
    private readonly humans: HumanResolverTokens,
    private readonly queries: EscalationQueries,
    private readonly rejections: RejectionRecorder,
  ) {}

  identify(credentials: HumanCredentials, audit: { command: string; request?: CommandRequest; body: unknown }): Promise<Identity> {
    return this.audited(audit, undefined, () => this.humans.identify(credentials));
  }

  /** The reader as the registry has them now; undefined once they may read nothing (see HumanResolverTokens.current). */
  current(who: Identity): Promise<Identity | undefined> {
    return this.humans.current(who);
  }

  async list(
    credentials: HumanCredentials,
    query: Record<string, unknown>,
    maxReplyBytes?: number,
    request?: CommandRequest,
  ): Promise<EscalationPage> {
    const audit = { command: 'escalation.list', request, body: query };
    const who = await this.identify(credentials, audit);
    const { page, omitted } = await this.audited(audit, who, async () => this.queries.list(query, who, maxReplyBytes));
    if (omitted.length > 0) {
      const denial = new AcpError(
        'FORBIDDEN',
        `${who.participant_id}: escalations left out, no grant on ${omitted.slice(0, 10).join(', ')}`,
        'domain',
      );
      await this.rejections.record(audit.command, request, query, denial, who);
    }
    return page;
  }

  async get(credentials: HumanCredentials, proposalId: unknown, request?: CommandRequest): Promise<EscalationDetail> {
    const audit = { command: 'escalation.get', request, body: { proposal_id: proposalId } };
    const who = await this.identify(credentials, audit);
    const detail = await this.audited(audit, who, () => this.queries.get(proposalId, who));
    if (detail.proposal.payload_withheld) {
      const denial = new AcpError(
        'FORBIDDEN',
        `payload withheld: ${who.participant_id}'s clearance does not cover ${detail.proposal.classification}`,
        'classification',
      );
      await this.rejections.record(audit.command, request, audit.body, denial, who);
    }
    return detail;
  }

  private async audited<T>(
    audit: { command: string; request?: CommandRequest; body: unknown },
    who: Identity | undefined,
    work: () => Promise<T>,
  ): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof AcpError) await this.rejections.record(audit.command, audit.request, audit.body, err, who);
      throw err;
    }
  }
}
