import { Injectable } from '@nestjs/common';
import { CommandMetadata, parseResolveRequest, Proposal, PROPOSAL_COMMAND_TYPES, projectProposal, ResolveRequest } from '@conclave/acp-protocol';
import { AUTH_HEADERS } from '@conclave/registry-protocol';
import { CommandContext, CommandRequest, ProposalStore } from '@conclave/service-kit';
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
    private readonly context: CommandContext,
  ) {}

  /**
   * `authorization`: an `Authorization` header (human resolver token). `request`: the NATS
   * request, when it comes signed by a registered participant (security issue): then the
   * participant registry authenticates the human and authorizes `resolve` in the proposal's
   * domain (the human-resolver role and a domain grant), and no token is needed.
   */
  async handle(body: unknown, authorization: string | undefined, request?: CommandRequest): Promise<{ proposal: Proposal }> {
    const record = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
    const declared = typeof record?.['resolved_by'] === 'string' ? (record['resolved_by'] as string) : undefined;
    const { data, metadata } = request?.getHeaders()?.get(AUTH_HEADERS.signature)
      ? await this.signed(record, declared, request)
      : this.withToken(body, record, declared, authorization);
    await this.desk.route(data.proposal_id);
    const result = await this.store.execute({ type: PROPOSAL_COMMAND_TYPES.ResolveEscalation, ...metadata, data });
    return { proposal: projectProposal(result.state) };
  }

  /** Who first (a missing or wrong token is UNAUTHENTICATED whatever the body says), then what. */
  private withToken(body: unknown, record: Record<string, unknown> | undefined, declared: string | undefined, authorization: string | undefined) {
    const early = this.humans.required || authorization ? this.humans.authenticate(authorization, declared) : undefined;
    const request = parseResolveRequest(early !== undefined && record ? { ...record, resolved_by: early } : body);
    const human = early ?? this.humans.authenticate(undefined, request.resolved_by);
    return { data: { ...request, resolved_by: human }, metadata: this.humans.metadata(human) };
  }

  private async signed(
    record: Record<string, unknown> | undefined,
    declared: string | undefined,
    request: CommandRequest,
  ): Promise<{ data: ResolveRequest; metadata: CommandMetadata }> {
    const identity = await this.context.authenticate(request, declared);
    const human = await this.context.actAs(identity, declared ?? identity.participant_id, 'resolved_by');
    const data = parseResolveRequest({ ...record, resolved_by: human.participant_id });
    const { state } = await this.store.load(data.proposal_id);
    if (state.status !== 'initial') this.context.authorize(human, 'resolve', state.proposal.domain);
    return { data, metadata: this.context.metadata(human) };
  }
}
