import type { DecisionEvent, Proposal } from '@conclave/acp-protocol';
import { ConclaveClient, ConclaveError, ConclaveUnavailableError, CouncilRequestError } from '@conclave/sdk';
import type { CouncilMemberOptions, VoteInput } from '@conclave/sdk';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { CouncilDesk, CouncilDeskError } from './council-desk';
import { TOOL_INPUT_SCHEMAS, ToolName } from './tool-schemas';

/** A refusal as an MCP tool error carries it: the ACP code (or the MCP server's own), message, field. */
export interface ToolErrorBody {
  code: string;
  message: string;
  field?: string;
  /**
   * True when the same call may succeed later: the service did not answer, or refused it
   * RATE_LIMITED (the SDK already waited out what its budget allowed) after `retry_after_ms`.
   */
  retryable: boolean;
  /** RATE_LIMITED: how long to wait before calling again. */
  retry_after_ms?: number;
}

export class ToolError extends Error {
  constructor(readonly body: ToolErrorBody) {
    super(`${body.code}: ${body.message}`);
  }
}

const TOOL_DESCRIPTIONS: Record<ToolName, string> = {
  propose:
    'Post a proposal (or an observation or hypothesis) for other agents to endorse or challenge. Returns the pending proposal; keep its proposal_id. A retry with the same proposal_id and body is safe.',
  endorse:
    'Vote for a pending proposal with a confidence in [0, 1]; the service computes the weight (confidence x domain authority x trust).',
  challenge: 'Vote against a pending proposal with a confidence in [0, 1], with a reason.',
  escalate: 'Hand a pending proposal to a human: it stops accepting votes and waits for a human resolution.',
  get_proposal: 'The proposal as it stands now: status, responses with their weights, resolution.',
  list_proposals: 'Proposals, newest first, filtered by domain and status; page with next_cursor.',
  wait_for_decision:
    'Wait until a proposal is decided (or timeout_ms passes): returns the decision event and the proposal, or timed_out with the proposal as it stands.',
  explain_decision:
    'Why a proposal was decided as it was: each response with its weight factors, the vote totals, the quorum policy applied, and the entries that caused it and that it caused.',
  next_council_task:
    "For a Council member: the next task the controller sent this member (a stage of a run, with its inputs and deadline), or none within timeout_ms. A task with 'refusal' is one whose previous answer was refused: fix and answer again.",
  submit_council_answer:
    "For a Council member: answer a task from next_council_task with the stage's artifact (or an error); returns the controller's verdict.",
};

export interface ConclaveToolsOptions {
  client: ConclaveClient;
  /** Who this server acts for: the default author, voter, escalation requester and council member. */
  participantId: string;
  /** Council subject prefix (default `council`). */
  councilPrefix?: string;
  /** The council member id (default: the participant id). */
  councilMemberId?: string;
  /** Signs council answers (as the participant) where the service requires authentication. */
  signer?: CouncilMemberOptions['signer'];
}

/**
 * The Conclave tools, independent of MCP's transports: each takes the tool's arguments (checked
 * against its input schema) and returns a JSON result, or throws a ToolError with a stable code.
 */
export class ConclaveTools {
  readonly desk: CouncilDesk;
  private readonly validators = new Map<ToolName, JsonSchemaValidator<Record<string, unknown>>>();

  constructor(private readonly options: ConclaveToolsOptions) {
    this.desk = new CouncilDesk(options.client.nc, options.councilMemberId ?? options.participantId, options.councilPrefix, options.signer);
    const ajv = new AjvJsonSchemaValidator();
    for (const [name, schema] of Object.entries(TOOL_INPUT_SCHEMAS)) {
      this.validators.set(name as ToolName, ajv.getValidator(schema as JsonSchemaType));
    }
  }

  list(): Array<{ name: ToolName; description: string; inputSchema: Record<string, unknown> }> {
    return (Object.keys(TOOL_INPUT_SCHEMAS) as ToolName[]).map((name) => ({
      name,
      description: TOOL_DESCRIPTIONS[name],
      inputSchema: TOOL_INPUT_SCHEMAS[name],
    }));
  }

  async call(name: string, args: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
    const validate = this.validators.get(name as ToolName);
    if (!validate) throw new ToolError({ code: 'UNKNOWN_TOOL', message: `no tool named ${name}`, retryable: false });
    const checked = validate(args ?? {});
    if (!checked.valid) throw new ToolError({ code: 'SCHEMA_VIOLATION', message: checked.errorMessage, retryable: false });
    try {
      return await this.run(name as ToolName, checked.data);
    } catch (err) {
      throw toToolError(err);
    }
  }

  async close(): Promise<void> {
    await this.desk.stop();
  }

  private async run(name: ToolName, a: Record<string, unknown>): Promise<Record<string, unknown>> {
    const client = this.options.client;
    const me = this.options.participantId;
    const id = a['proposal_id'] as string;
    switch (name) {
      case 'propose': {
        const { author, payload, domain, quorum, ...rest } = a;
        const proposal = await client.propose({
          ...rest,
          author: (author as string | undefined) ?? me,
          domain: domain as string,
          payload: payload as Record<string, unknown>,
          quorum: quorum as number,
        });
        return { proposal };
      }
      case 'endorse':
      case 'challenge': {
        const { proposal_id, participant_id, ...vote } = a;
        const v = { ...vote, participant_id: (participant_id as string | undefined) ?? me } as VoteInput;
        const proposal =
          name === 'endorse' ? await client.endorse(proposal_id as string, v) : await client.challenge(proposal_id as string, v);
        return { proposal };
      }
      case 'escalate':
        return {
          proposal: await client.escalate(id, { reason: a['reason'] as string, requested_by: (a['requested_by'] as string) ?? me }),
        };
      case 'get_proposal':
        return { proposal: await client.get(id) };
      case 'list_proposals':
        return await client.list(a);
      case 'wait_for_decision':
        return this.waitForDecision(id, (a['timeout_ms'] as number) ?? 30_000, (a['until'] as string) === 'final');
      case 'explain_decision':
        return this.explain(id);
      case 'next_council_task': {
        const task = await this.desk.next((a['timeout_ms'] as number) ?? 30_000);
        return task ? { task } : { task: null };
      }
      case 'submit_council_answer': {
        const verdict = await this.desk.submit(a['task_id'] as string, a);
        return { verdict: verdict ?? null };
      }
    }
  }

  /**
   * The proposal's first decision event (or, with `final`, the one that ends it: escalations wait
   * for their human), from the decisions stream, read from the proposal's creation on so that a
   * decision made before the call is found too. An agent that may not read that stream (the
   * deployment's NATS permissions give agents `acp.v1.get`, not ACP_DECISIONS) polls the proposal
   * instead; then `decision` is null and the proposal's resolution says what was decided.
   */
  private async waitForDecision(proposalId: string, timeoutMs: number, final: boolean): Promise<Record<string, unknown>> {
    const client = this.options.client;
    const settled = (p: Proposal) => (final ? p.status === 'resolved' || p.status === 'expired' : p.status !== 'pending');
    const deadline = Date.now() + timeoutMs;
    const before = await client.get(proposalId);
    let decision: DecisionEvent | undefined;
    let streamed = true;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    try {
      // A minute of slack: `created_at` is the author's clock, the stream's start time the server's.
      const since = new Date(Date.parse(before.created_at) - 60_000);
      for await (const d of client.decisions({ domain: before.domain, since, signal: abort.signal })) {
        if (d.proposal_id !== proposalId) continue;
        if (final && d.outcome === 'escalated') continue;
        decision = d;
        break;
      }
    } catch {
      streamed = false;
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
    let proposal = await client.get(proposalId);
    if (!streamed) {
      for (let pause = 100; !settled(proposal) && Date.now() < deadline; pause = Math.min(pause * 2, 2_000)) {
        await new Promise((r) => setTimeout(r, Math.min(pause, Math.max(deadline - Date.now(), 0))));
        proposal = await client.get(proposalId);
      }
    }
    if (!decision) return { decided: settled(proposal), timed_out: !settled(proposal), decision: null, proposal };
    return { decided: true, timed_out: false, decision, proposal };
  }

  /** Everything a decision was made from, in the proposal's own words (spec 6, 7, 11.3). */
  private async explain(proposalId: string): Promise<Record<string, unknown>> {
    const client = this.options.client;
    const [proposal, lineage] = await Promise.all([client.get(proposalId), client.lineage(proposalId)]);
    const r = proposal.resolution;
    const responses = proposal.responses.map((x) => ({
      participant_id: x.participant_id,
      response_type: x.response_type,
      confidence: x.confidence,
      domain_authority: x.domain_authority,
      trust_score: x.trust_score,
      weight: x.weight,
      reason: x.reason ?? null,
      timestamp: x.timestamp,
    }));
    // The rules it was decided by: its own quorum policy, else its domain document's default, else count (7.1).
    const document = proposal.policy;
    const policy = proposal.quorum_policy ?? document?.default_quorum_policy ?? { kind: 'count', threshold: proposal.quorum };
    const custom = document?.quorum_policies?.find((p) => p.kind === policy.kind);
    return {
      proposal_id: proposal.proposal_id,
      domain: proposal.domain,
      type: proposal.type,
      author: proposal.author,
      status: proposal.status,
      outcome: r?.outcome ?? null,
      trigger: r?.trigger ?? null,
      votes_for: r?.votes_for ?? null,
      votes_against: r?.votes_against ?? null,
      decided_at: r?.decided_at ?? null,
      quorum: proposal.quorum,
      quorum_policy: custom ? { ...policy, definition: custom } : policy,
      policy: document ? { domain: document.domain, version: document.version, document } : null,
      weight_function: document?.weight_function ?? {
        kind: 'product',
        description: 'weight = confidence x domain_authority x trust_score (RFC 6.1), factors clamped to [0, 1]',
      },
      responses,
      resolution: r,
      lineage: { causes: lineage.causes, effects: lineage.effects, truncated: lineage.truncated },
      summary: summarize(proposal, responses.length),
    };
  }
}

function summarize(p: Proposal, responses: number): string {
  const r = p.resolution;
  if (!r) return `${p.status}: ${responses} response(s) so far, quorum ${p.quorum}`;
  const by = r.resolved_by ? ` by ${r.resolved_by}` : '';
  return `${r.outcome} (trigger ${r.trigger}${by}): for ${r.votes_for} / against ${r.votes_against} from ${responses} response(s), quorum ${p.quorum}`;
}

/** A failure of a tool as the model reads it (exported for its test). */
export function toToolError(err: unknown): ToolError {
  if (err instanceof ToolError) return err;
  if (err instanceof ConclaveError || err instanceof CouncilRequestError) {
    const message = err instanceof ConclaveError ? err.message.replace(`${err.code}: `, '') : err.message;
    const later = err.code === 'RATE_LIMITED' && err.retryAfterMs !== undefined ? { retry_after_ms: err.retryAfterMs } : undefined;
    return new ToolError({ code: err.code, message, field: err.field, retryable: later !== undefined, ...later });
  }
  if (err instanceof CouncilDeskError) return new ToolError({ code: err.code, message: err.message, retryable: false });
  if (err instanceof ConclaveUnavailableError) return new ToolError({ code: 'UNAVAILABLE', message: err.message, retryable: true });
  return new ToolError({ code: 'INTERNAL', message: (err as Error)?.message ?? String(err), retryable: false });
}
