import { Injectable } from '@nestjs/common';
import { parseResolveRequest, Proposal, PROPOSAL_COMMAND_TYPES, projectProposal } from '@conclave/acp-protocol';
import { ProposalStore } from '@conclave/service-kit';
import { EscalationDesk } from './escalation-desk';
import { HumanResolverTokens } from './human-resolver-tokens';

/**
 * A human resolves an escalated proposal (RFC 10.2), from NATS (`acp.v1.resolve`), HTTP, the CLI
 * or the console: authenticate the human, make sure the desk has taken the escalation (so its
 * payload hash and sign-off rule are fixed), then ResolveEscalation through the one pipeline. The
 * decider refuses anything but the open escalation: a second resolution is NOT_ESCALATED.
 */
@Injectable()
export class ResolveEscalationHandler {
  constructor(
    private readonly store: ProposalStore,
    private readonly desk: EscalationDesk,
    private readonly humans: HumanResolverTokens,
  ) {}

  async handle(body: unknown, authorization: string | undefined): Promise<{ proposal: Proposal }> {
    // Who first (a missing or wrong token is UNAUTHENTICATED whatever the body says), then what.
    const record = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
    const declared = typeof record?.['resolved_by'] === 'string' ? (record['resolved_by'] as string) : undefined;
    const early = this.humans.required || authorization ? this.humans.authenticate(authorization, declared) : undefined;
    const request = parseResolveRequest(early !== undefined && record ? { ...record, resolved_by: early } : body);
    const human = early ?? this.humans.authenticate(undefined, request.resolved_by);
    await this.desk.route(request.proposal_id);
    const result = await this.store.execute({
      type: PROPOSAL_COMMAND_TYPES.ResolveEscalation,
      ...this.humans.metadata(human),
      data: { ...request, resolved_by: human },
    });
    return { proposal: projectProposal(result.state) };
  }
}
