import { Injectable } from '@nestjs/common';
import { AcpError, parseResolveRequest, PROPOSAL_COMMAND_TYPES } from '@conclave/acp-protocol';
import { checkTextLengths, TEXT_LIMITS } from '@conclave/messaging';
import { CommandContext, Identity, ProposalForReader, ProposalReadPolicy, ProposalStore, RejectionRecorder } from '@conclave/service-kit';
import { EscalationDesk } from './escalation-desk';
import { HumanCredentials, HumanResolverTokens } from './human-resolver-tokens';

const BOUNDED_FIELDS: Record<string, number> = {
  proposal_id: TEXT_LIMITS.id,
  resolved_by: TEXT_LIMITS.id,
  escalation_id: TEXT_LIMITS.id,
  payload_hash: TEXT_LIMITS.id,
  note: TEXT_LIMITS.text,
};

/**
 * A human resolves an escalated proposal (RFC 10.2), from NATS (`acp.v1.resolve`), HTTP, the CLI
 * or the console: identify the human (signed request, or a token of a registered participant),
 * authorize `resolve` in the proposal's domain (human-resolver role and a grant) and require a
 * clearance that covers its classification (nobody decides what they may not read, as with
 * `respond`), make sure the desk has taken the escalation (so its payload hash and sign-off rule
 * are fixed), then ResolveEscalation through the one pipeline. The reply is the proposal as this
 * human may read it. Every refusal is recorded for the audit log.
 */
@Injectable()
export class ResolveEscalationHandler {
  constructor(
    private readonly store: ProposalStore,
    private readonly desk: EscalationDesk,
    private readonly humans: HumanResolverTokens,
    private readonly context: CommandContext,
    private readonly rejections: RejectionRecorder,
    private readonly reading: ProposalReadPolicy,
  ) {}

  async handle(body: unknown, credentials: Omit<HumanCredentials, 'declared'>): Promise<{ proposal: ProposalForReader }> {
    const record = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
    const declared = typeof record?.['resolved_by'] === 'string' ? (record['resolved_by'] as string) : undefined;
    let identity: Identity | undefined;
    try {
      identity = await this.humans.identify({ ...credentials, declared });
      if (!this.context.authRequired && declared === undefined && identity.participant_id === 'anonymous') {
        throw new AcpError('SCHEMA_VIOLATION', 'resolved_by is required', 'resolved_by');
      }
      const human = await this.context.actAs(identity, declared ?? identity.participant_id, 'resolved_by');
      checkTextLengths(body, BOUNDED_FIELDS);
      const data = parseResolveRequest({ ...record, resolved_by: human.participant_id });
      const { state } = await this.store.load(data.proposal_id);
      if (state.status !== 'initial') {
        this.context.authorize(human, 'resolve', state.proposal.domain);
        if (!(await this.reading.mayReadPayload(data.proposal_id, human))) {
          throw new AcpError('FORBIDDEN', `${human.participant_id}'s clearance does not cover this proposal`, 'proposal_id');
        }
      }
      await this.desk.route(data.proposal_id);
      const result = await this.store.execute({ type: PROPOSAL_COMMAND_TYPES.ResolveEscalation, ...this.context.metadata(human), data });
      return { proposal: await this.reading.render(result.state, human) };
    } catch (err) {
      if (err instanceof AcpError) await this.rejections.record('resolve', credentials.request, body, err, identity);
      throw err;
    }
  }
}
