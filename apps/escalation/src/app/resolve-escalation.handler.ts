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
    const withHuman = fillResolvedBy(body, this.humans, authorization);
    const request = parseResolveRequest(withHuman);
    const human = this.humans.authenticate(authorization, request.resolved_by);
    await this.desk.route(request.proposal_id);
    const result = await this.store.execute({
      type: PROPOSAL_COMMAND_TYPES.ResolveEscalation,
      ...this.humans.metadata(human),
      data: { ...request, resolved_by: human },
    });
    return { proposal: projectProposal(result.state) };
  }
}

/** With a token, `resolved_by` may be left out: the token names the human. */
function fillResolvedBy(body: unknown, humans: HumanResolverTokens, authorization: string | undefined): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || (body as Record<string, unknown>)['resolved_by'] !== undefined) return body;
  if (!authorization) return body;
  return { ...body, resolved_by: humans.authenticate(authorization, undefined) };
}
