/**
 * The escalation service's HTTP API as an OpenAPI 3.1 document, written by hand (no generator,
 * no dependency) and served at GET /openapi.json. The escalation-http e2e test checks that every
 * route it exercises is described here.
 */
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: ref('ErrorReply') } } });
const ok = (description: string, props: Record<string, unknown>) => ({
  description,
  content: {
    'application/json': {
      schema: { type: 'object', required: ['ok', ...Object.keys(props)], properties: { ok: { const: true }, ...props } },
    },
  },
});
const proposalIdParam = {
  name: 'proposal_id',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^[0-7][0-9A-HJKMNP-TV-Z]{25}$' },
};

export const OPENAPI_DOCUMENT = {
  openapi: '3.1.0',
  info: {
    title: 'Conclave escalation service',
    version: '1.0.0',
    description:
      'Human escalation (ACP RFC section 10): the queue of escalated proposals and their human resolution. ' +
      'The same operations exist on NATS: acp.v1.resolve, acp.v1.escalation.list, acp.v1.escalation.get. ' +
      'Errors use the stable codes of the NATS API.',
  },
  paths: {
    '/escalations': {
      get: {
        operationId: 'listEscalations',
        summary: 'List escalations, oldest first (default: the open ones), of the domains the reader has a grant on',
        security: [{ humanToken: [] }],
        parameters: [
          { name: 'status', in: 'query', schema: { enum: ['open', 'resolved', 'expired', 'all'] } },
          { name: 'domain', in: 'query', description: 'a domain and its subdomains', schema: { type: 'string' } },
          { name: 'assignee', in: 'query', schema: { type: 'string' } },
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 500 } },
        ],
        responses: {
          '200': ok('The escalations', { escalations: { type: 'array', items: ref('Escalation') } }),
          '400': errorResponse('SCHEMA_VIOLATION'),
          '401': errorResponse('UNAUTHENTICATED: no token, or not the token of an active registered participant'),
        },
      },
    },
    '/escalations/{proposal_id}': {
      get: {
        operationId: 'getEscalation',
        summary: 'One escalation with its proposal: payload, every response with its weight and reason, the vote totals',
        description: "Needs a grant on the domain; a payload above the reader's clearance comes as {} with payload_withheld: true.",
        security: [{ humanToken: [] }],
        parameters: [proposalIdParam],
        responses: {
          '200': ok('The escalation', {
            escalation: ref('Escalation'),
            proposal: ref('Proposal'),
            votes: { type: 'object', properties: { for: { type: 'number' }, against: { type: 'number' }, responses: { type: 'integer' } } },
            binding: {
              type: 'object',
              description: 'Send these back with the resolution to bind it to this exact escalation.',
              properties: { escalation_id: { type: 'string' }, payload_hash: { type: 'string' } },
            },
          }),
          '400': errorResponse('INVALID_ID'),
          '401': errorResponse('UNAUTHENTICATED: no token, or not the token of an active registered participant'),
          '403': errorResponse("FORBIDDEN: no grant on the proposal's domain"),
          '404': errorResponse('PROPOSAL_NOT_FOUND'),
          '409': errorResponse('NOT_ESCALATED: the proposal was never escalated'),
        },
      },
    },
    '/escalations/{proposal_id}/resolve': {
      post: {
        operationId: 'resolveEscalation',
        summary: 'A human approves or rejects an escalated proposal (trigger manual); a decision event follows',
        description:
          'With CONCLAVE_AUTH_MODE=required, a token must be presented (Authorization: Bearer <token>); it names a registered ' +
          'participant, who needs the human-resolver role, a resolve grant on the domain and a clearance that covers the proposal; otherwise resolved_by is taken as declared. Under an M-of-N sign-off route this records ' +
          'one sign-off, and the proposal resolves once M of the named humans agree (or at once on a veto).',
        security: [{ humanToken: [] }],
        parameters: [proposalIdParam],
        requestBody: { required: true, content: { 'application/json': { schema: ref('ResolveRequest') } } },
        responses: {
          '200': ok('The proposal after the resolution (status resolved, or still escalated while sign-offs are missing)', {
            proposal: ref('Proposal'),
          }),
          '400': errorResponse('SCHEMA_VIOLATION (a note is required), INVALID_JSON'),
          '401': errorResponse('UNAUTHENTICATED: no token, or not a human resolver token'),
          '403': errorResponse(
            "FORBIDDEN: the token belongs to someone else than resolved_by, no resolve grant on the domain, a clearance below the proposal's classification, or the human is not one of the sign-off humans",
          ),
          '404': errorResponse('PROPOSAL_NOT_FOUND'),
          '409': errorResponse(
            'NOT_ESCALATED (not escalated, already resolved, or another escalation), CONFLICT (payload_hash mismatch), DUPLICATE_RESPONSE (signed off already)',
          ),
        },
      },
    },
    '/openapi.json': { get: { operationId: 'openapi', summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1' } } } },
    '/console/': { get: { operationId: 'console', summary: 'The web console (HTML)', responses: { '200': { description: 'text/html' } } } },
    '/console/decisions': {
      get: {
        operationId: 'decisionFeed',
        summary: 'Live decision events (Server-Sent Events, event "decision"), fed from the ACP_DECISIONS stream',
        security: [{ humanToken: [] }],
        responses: { '200': { description: 'text/event-stream' }, '401': errorResponse('UNAUTHENTICATED') },
      },
    },
    '/healthz': { get: { operationId: 'healthz', summary: 'Liveness', responses: { '200': { description: 'alive' } } } },
    '/readyz': {
      get: {
        operationId: 'readyz',
        summary: 'Readiness (inbox caught up, NATS connected)',
        responses: { '200': { description: 'ready' }, '503': { description: 'not ready' } },
      },
    },
  },
  components: {
    securitySchemes: {
      humanToken: {
        type: 'http',
        scheme: 'bearer',
        description: 'A token of CONCLAVE_HUMAN_TOKENS (32+ characters) naming an active registered participant',
      },
    },
    schemas: {
      ErrorReply: {
        type: 'object',
        required: ['ok', 'error'],
        properties: {
          ok: { const: false },
          error: {
            type: 'object',
            required: ['code', 'message'],
            properties: {
              code: {
                enum: [
                  'INVALID_JSON',
                  'SCHEMA_VIOLATION',
                  'UNSUPPORTED_SCHEMA_VERSION',
                  'INVALID_ID',
                  'PROPOSAL_NOT_FOUND',
                  'DUPLICATE_RESPONSE',
                  'NOT_ESCALATED',
                  'UNAUTHENTICATED',
                  'FORBIDDEN',
                  'PAYLOAD_TOO_LARGE',
                  'CONFLICT',
                  'INTERNAL',
                ],
              },
              message: { type: 'string' },
              field: { type: 'string' },
            },
          },
        },
      },
      ResolveRequest: {
        type: 'object',
        required: ['outcome', 'note'],
        properties: {
          outcome: { enum: ['approved', 'rejected'] },
          note: { type: 'string', minLength: 1, description: 'why (required on HTTP)' },
          resolved_by: { type: 'string', description: 'the human; may be left out when a token is presented' },
          escalation_id: { type: 'string', description: 'the escalation answered (from GET /escalations/{id} binding)' },
          payload_hash: { type: 'string', description: 'the payload hash the human saw (from the binding)' },
        },
      },
      SignOff: {
        type: 'object',
        properties: {
          by: { type: 'string' },
          outcome: { enum: ['approved', 'rejected'] },
          note: { type: ['string', 'null'] },
          at: { type: 'string', format: 'date-time' },
        },
      },
      LadderStep: {
        type: 'object',
        required: ['action', 'after_ms'],
        properties: {
          action: { enum: ['remind', 'reassign', 'default'] },
          after_ms: { type: 'integer', minimum: 0 },
          to: { type: 'array', items: { type: 'string' } },
          outcome: { enum: ['approved', 'rejected', 'expired'] },
        },
      },
      Escalation: {
        type: 'object',
        description: 'One escalation as the desk sees it (RFC 10.3 metadata, routing, ladder position, sign-offs)',
        properties: {
          proposal_id: { type: 'string' },
          domain: { type: 'string' },
          status: { enum: ['open', 'resolved', 'expired'] },
          escalation_id: { type: 'string' },
          escalation: {
            type: 'object',
            properties: {
              reason: { enum: ['tie', 'manual', 'policy', 'timeout-tie'] },
              escalated_at: { type: 'string', format: 'date-time' },
              requested_by: { type: 'string' },
              note: { type: ['string', 'null'] },
              policy_id: { type: 'string' },
              assigned_to: { type: 'string' },
            },
          },
          votes_for: { type: 'number' },
          votes_against: { type: 'number' },
          assignees: { type: 'array', items: { type: 'string' } },
          routed: { type: 'boolean' },
          route_id: { type: ['string', 'null'] },
          payload_hash: { type: ['string', 'null'] },
          routing: {
            type: ['object', 'null'],
            properties: {
              ladder: { type: 'array', items: ref('LadderStep') },
              sign_off: {
                type: ['object', 'null'],
                properties: { required: { type: 'integer' }, of: { type: 'array', items: { type: 'string' } }, veto: { type: 'boolean' } },
              },
            },
          },
          next_step: { type: 'integer' },
          next_step_due_at: { type: ['string', 'null'], format: 'date-time' },
          sign_offs: { type: 'array', items: ref('SignOff') },
          resolution: { type: ['object', 'null'], description: 'RFC 12.5 Resolution once closed' },
          updated_at: { type: 'string', format: 'date-time' },
        },
      },
      Proposal: {
        type: 'object',
        description: 'RFC 12.2 Proposal with its responses (each with weight and reason) and resolution',
        properties: {
          proposal_id: { type: 'string' },
          type: { enum: ['observation', 'hypothesis', 'proposal'] },
          domain: { type: 'string' },
          author: { type: 'string' },
          payload: { type: 'object' },
          status: { enum: ['pending', 'resolved', 'escalated', 'expired'] },
          responses: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                participant_id: { type: 'string' },
                response_type: { enum: ['endorse', 'challenge'] },
                confidence: { type: 'number' },
                domain_authority: { type: 'number' },
                trust_score: { type: 'number' },
                weight: { type: 'number' },
                reason: { type: ['string', 'null'] },
                timestamp: { type: 'string', format: 'date-time' },
              },
            },
          },
          quorum: { type: 'integer' },
          resolution: { type: ['object', 'null'] },
        },
      },
    },
  },
} as const;
