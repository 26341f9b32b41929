import { Injectable } from '@nestjs/common';
import { AcpError, parseResolveRequest, Proposal, PROPOSAL_COMMAND_TYPES, projectProposal } from '@conclave/acp-protocol';
import { checkTextLengths, TEXT_LIMITS } from '@conclave/messaging';
import { CommandContext, Identity, ProposalStore, RejectionRecorder } from '@conclave/service-kit';
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
 * authorize `resolve` in the proposal's domain (human-resolver role and a grant), make sure the
 * desk has taken the escalation (so its payload hash and sign-off rule are fixed), then
 * ResolveEscalation through the one pipeline. Every refusal is recorded for the audit log.
 */
@Injectable()
export class ResolveEscalationHandler {
  constructor(
    private readonly store: ProposalStore,
    private readonly desk: EscalationDesk,
    private readonly humans: HumanResolverTokens,
    private readonly context: CommandContext,
    private readonly rejections: RejectionRecorder,
  ) {}

  async handle(body: unknown, credentials: Omit<HumanCredentials, 'declared'>): Promise<{ proposal: Proposal }> {
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
      if (state.status !== 'initial') this.context.authorize(human, 'resolve', state.proposal.domain);
      await this.desk.route(data.proposal_id);
      const result = await this.store.execute({ type: PROPOSAL_COMMAND_TYPES.ResolveEscalation, ...this.context.metadata(human), data });
      return { proposal: projectProposal(result.state) };
    } catch (err) {
      if (err instanceof AcpError) await this.rejections.record('resolve', credentials.request, body, err, identity);
      throw err;
    }
  }
}
