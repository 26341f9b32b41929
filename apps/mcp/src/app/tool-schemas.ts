import { BUILT_IN_QUORUM_POLICY_KINDS, JsonSchema, WIRE_SCHEMAS } from '@conclave/acp-protocol';

/**
 * The tools' input schemas, derived from the Appendix B wire schemas (libs/acp-protocol/schemas):
 * a field keeps the wire's type, bounds and enums; the tool only chooses which fields an agent
 * sends and which it may leave to the server (ids, timestamps, its own participant id).
 */
type Props = Record<string, JsonSchema>;

const proposal = WIRE_SCHEMAS.proposal as { properties: Props; $defs: { Response: { properties: Props } } };
const response = proposal.$defs.Response.properties;
const wire = proposal.properties;

function pick(from: Props, names: string[]): Props {
  const out: Props = {};
  for (const n of names) {
    if (!from[n]) throw new Error(`the wire schema has no field ${n}`);
    out[n] = from[n];
  }
  return out;
}

function describe(schema: JsonSchema, description: string): JsonSchema {
  return { ...schema, description };
}

function object(properties: Props, required: string[]): JsonSchema {
  return { type: 'object', properties, required, additionalProperties: false };
}

const ulid = { type: 'string', pattern: '^[0-9A-HJKMNP-TV-Z]{26}$' };
const proposalId = describe(ulid, 'the proposal id (ULID)');
const ids = (what: string): JsonSchema => ({ type: 'array', items: ulid, description: what });
const participants = (what: string): JsonSchema => ({ type: 'array', items: { type: 'string', minLength: 1 }, description: what });

const timeoutMs = (fallback: number, max: number): JsonSchema => ({
  type: 'integer',
  minimum: 0,
  maximum: max,
  description: `how long to wait in milliseconds (default ${fallback}, at most ${max})`,
});

/** Extensions of `acp.v1.propose` (docs/design.md section 5) beside the 12.2 fields. */
const proposeExtensions: Props = {
  quorum_policy: {
    type: 'object',
    properties: {
      kind: { type: 'string', description: `a built-in kind (${BUILT_IN_QUORUM_POLICY_KINDS.join(', ')}) or a policy the domain defines` },
      threshold: { type: 'number', minimum: 0 },
    },
    required: ['kind'],
    additionalProperties: false,
    description: 'the quorum policy (RFC 7); absent: count-based quorum',
  },
  depends_on: ids('child proposal ids (RFC 9.3); they must exist'),
  caused_by: ids('ids of earlier entries that caused this one (RFC 11.3); they must exist'),
  eligible_participants: participants('who must respond under a unanimous quorum (RFC 7.3)'),
};

const vote = (verb: string): JsonSchema =>
  object(
    {
      proposal_id: proposalId,
      ...pick(response, ['confidence', 'domain_authority', 'trust_score', 'reason']),
      participant_id: describe(response['participant_id'], `who ${verb}s (default: this server's participant)`),
    },
    ['proposal_id', 'confidence'],
  );

export const TOOL_INPUT_SCHEMAS = {
  propose: object(
    {
      ...pick(wire, ['type', 'domain', 'payload', 'quorum', 'expires_at']),
      author: describe(wire['author'], "who proposes (default: this server's participant)"),
      proposal_id: describe(ulid, 'optional; a retry of the same call must reuse it (default: a new ULID)'),
      created_at: describe(wire['created_at'], 'default: now'),
      ...proposeExtensions,
    },
    ['domain', 'payload', 'quorum'],
  ),
  endorse: vote('endorse'),
  challenge: vote('challenge'),
  escalate: object(
    {
      proposal_id: proposalId,
      reason: { type: 'string', minLength: 1, description: 'why a human should decide' },
      requested_by: { type: 'string', minLength: 1, description: "default: this server's participant" },
    },
    ['proposal_id', 'reason'],
  ),
  get_proposal: object({ proposal_id: proposalId }, ['proposal_id']),
  list_proposals: object(
    {
      domain: wire['domain'],
      status: wire['status'],
      limit: { type: 'integer', minimum: 1, maximum: 500 },
      cursor: { type: 'string' },
    },
    [],
  ),
  wait_for_decision: object(
    {
      proposal_id: proposalId,
      timeout_ms: timeoutMs(30_000, 600_000),
      until: {
        type: 'string',
        enum: ['decided', 'final'],
        description: "'decided' (default): the first decision, escalated included; 'final': approved, rejected or expired",
      },
    },
    ['proposal_id'],
  ),
  explain_decision: object({ proposal_id: proposalId }, ['proposal_id']),
  next_council_task: object({ timeout_ms: timeoutMs(30_000, 600_000) }, []),
  submit_council_answer: object(
    {
      task_id: { type: 'string', minLength: 1, description: 'the task_id of the task being answered' },
      artifact: {
        type: ['object', 'array'],
        description:
          "the stage's artifact (CandidateArtifact, reviews, RevisionArtifact...; each stage's JSON Schema is served on council.v1.schemas)",
      },
      usage: {
        type: 'object',
        properties: { cost: { type: 'number', minimum: 0 }, tokens: { type: 'integer', minimum: 0 } },
        description: 'what this task cost, counted against the run budget',
      },
      error: {
        type: 'object',
        properties: { code: { type: 'string' }, message: { type: 'string' } },
        required: ['code', 'message'],
        description: 'instead of an artifact: why this member cannot do the task',
      },
    },
    ['task_id'],
  ),
} satisfies Record<string, JsonSchema>;

export type ToolName = keyof typeof TOOL_INPUT_SCHEMAS;
