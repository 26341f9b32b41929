import { POLICY_PATTERNS, WIRE_SCHEMAS } from '@conclave/acp-protocol';
import { ConclaveHarness } from '../support/conclave-harness';
import { httpAgent, McpAgent, stdioAgent } from '../support/mcp-client';

type Proposal = { proposal_id: string; status: string; expires_at: string | null; responses: Array<{ weight: number }> };
type Decided = { decided: boolean; timed_out: boolean; decision: Record<string, unknown> | null; proposal: Proposal };

/**
 * RFC Appendix C driven only through MCP: the MCP SDK's own client starts `apps/mcp` as a stdio
 * subprocess (as Claude Desktop or any MCP host does) and calls its tools; the real intake,
 * resolver and sweeper run against the real NATS server. Authentication is off here (each call
 * names its participant); mcp-secure covers signed agents over streamable HTTP.
 */
describe('MCP server over stdio: Appendix C through MCP tools only', () => {
  const h = new ConclaveHarness();
  let agent: McpAgent;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'sweeper');
    agent = await stdioAgent({ ...h.env, CONCLAVE_PARTICIPANT: 'agent-mcp' });
  }, 60_000);
  afterAll(async () => {
    await agent?.close();
    await h.stop();
  });

  const propose = async (args: Record<string, unknown>) => (await agent.call<{ proposal: Proposal }>('propose', args)).proposal;
  const waitFor = (proposal_id: string, extra: Record<string, unknown> = {}) =>
    agent.call<Decided>('wait_for_decision', { proposal_id, timeout_ms: 15_000, ...extra });

  it('lists the tools, with input schemas taken from the wire schemas', async () => {
    const { tools } = await agent.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      [
        'challenge',
        'endorse',
        'escalate',
        'explain_decision',
        'get_proposal',
        'list_proposals',
        'next_council_task',
        'propose',
        'submit_council_answer',
        'wait_for_decision',
      ].sort(),
    );
    const wire = WIRE_SCHEMAS.proposal as {
      properties: Record<string, unknown>;
      $defs: { Response: { properties: Record<string, unknown> } };
    };
    const endorse = tools.find((t) => t.name === 'endorse')!.inputSchema as { properties: Record<string, unknown>; required: string[] };
    expect(endorse.properties['confidence']).toEqual(wire.$defs.Response.properties['confidence']);
    expect(endorse.required).toEqual(['proposal_id', 'confidence']);
    const proposeSchema = tools.find((t) => t.name === 'propose')!.inputSchema as { properties: Record<string, unknown> };
    expect(proposeSchema.properties['quorum']).toEqual(wire.properties['quorum']);
    expect(proposeSchema.properties['type']).toEqual(wire.properties['type']);
  });

  it('C.1 2-of-3 endorsement: APPROVED by QUORUM, votes_for 1.1645, explained response by response', async () => {
    const p = await propose({ domain: 'risk.credit', author: 'agent-risk-001', payload: { action: 'approve_loan' }, quorum: 2 });
    expect(p.status).toBe('pending');
    await agent.call('endorse', {
      proposal_id: p.proposal_id,
      participant_id: 'agent-a',
      domain_authority: 0.9,
      confidence: 0.85,
      trust_score: 0.9,
    });
    await agent.call('endorse', {
      proposal_id: p.proposal_id,
      participant_id: 'agent-b',
      domain_authority: 0.8,
      confidence: 0.7,
      trust_score: 0.85,
    });
    const waited = await waitFor(p.proposal_id);
    expect(waited).toMatchObject({ decided: true, timed_out: false, proposal: { status: 'resolved' } });
    expect(waited.decision).toMatchObject({
      outcome: 'approved',
      trigger: 'quorum',
      votes_for: 1.1645,
      votes_against: 0,
      caused_by: p.proposal_id,
    });

    const why = await agent.call<Record<string, unknown>>('explain_decision', { proposal_id: p.proposal_id });
    expect(why).toMatchObject({
      outcome: 'approved',
      trigger: 'quorum',
      votes_for: 1.1645,
      quorum: 2,
      quorum_policy: { kind: 'count', threshold: 2 },
      responses: [
        { participant_id: 'agent-a', response_type: 'endorse', confidence: 0.85, domain_authority: 0.9, trust_score: 0.9, weight: 0.6885 },
        { participant_id: 'agent-b', response_type: 'endorse', confidence: 0.7, domain_authority: 0.8, trust_score: 0.85, weight: 0.476 },
      ],
      lineage: { causes: [], effects: [] },
    });
  });

  it('C.2 weighted domain experts: REJECTED by QUORUM despite 1-1', async () => {
    const p = await propose({ domain: 'ops.deploy', author: 'agent-ops', payload: { action: 'deploy' }, quorum: 2 });
    await agent.call('challenge', {
      proposal_id: p.proposal_id,
      participant_id: 'senior',
      domain_authority: 0.95,
      confidence: 0.9,
      trust_score: 0.95,
    });
    await agent.call('endorse', {
      proposal_id: p.proposal_id,
      participant_id: 'junior',
      domain_authority: 0.4,
      confidence: 0.6,
      trust_score: 0.7,
    });
    const { decision } = await waitFor(p.proposal_id);
    expect(decision).toMatchObject({ outcome: 'rejected', trigger: 'quorum', votes_for: 0.168, votes_against: 0.81225 });
  });

  it('C.3 timeout with partial responses: APPROVED by TIMEOUT', async () => {
    const expires_at = new Date(Date.now() + 1500).toISOString();
    const p = await propose({ domain: 'finance.budget', author: 'agent-fin', payload: { action: 'raise_budget' }, quorum: 3, expires_at });
    await agent.call('endorse', {
      proposal_id: p.proposal_id,
      participant_id: 'agent-a',
      domain_authority: 0.8,
      confidence: 0.75,
      trust_score: 0.9,
    });
    const { decision, proposal } = await waitFor(p.proposal_id);
    expect(decision).toMatchObject({ outcome: 'approved', trigger: 'timeout', votes_for: 0.54, votes_against: 0 });
    expect(proposal.status).toBe('resolved');
  });

  it('C.4 escalation from tie: ESCALATED by QUORUM; the tool names the escalation', async () => {
    const p = await propose({ domain: 'strategy.pricing', author: 'agent-pricing', payload: { action: 'raise_price' }, quorum: 2 });
    await agent.call('endorse', {
      proposal_id: p.proposal_id,
      participant_id: 'agent-a',
      domain_authority: 0.9,
      confidence: 0.8,
      trust_score: 0.9,
    });
    await agent.call('challenge', {
      proposal_id: p.proposal_id,
      participant_id: 'agent-b',
      domain_authority: 0.9,
      confidence: 0.8,
      trust_score: 0.9,
    });
    const { decision, proposal } = await waitFor(p.proposal_id);
    expect(decision).toMatchObject({ outcome: 'escalated', trigger: 'quorum', votes_for: 0.648, votes_against: 0.648 });
    expect(proposal.status).toBe('escalated');
    // Waiting for the final outcome: no human has resolved it, so the wait ends at its timeout.
    const final = await waitFor(p.proposal_id, { until: 'final', timeout_ms: 300 });
    expect(final).toMatchObject({ decided: false, timed_out: true, decision: null, proposal: { status: 'escalated' } });
  });

  it('a manual escalation, a listing, and every refusal as a typed tool error with the ACP code', async () => {
    const p = await propose({ domain: 'ops.mcp', payload: { action: 'restart' }, quorum: 3 });
    // The server's own participant is the default author.
    expect((await agent.call<{ proposal: { author: string } }>('get_proposal', { proposal_id: p.proposal_id })).proposal.author).toBe(
      'agent-mcp',
    );
    expect(
      await agent.refusal('endorse', { proposal_id: p.proposal_id, confidence: 0.9, domain_authority: 0.5, trust_score: 0.5 }),
    ).toMatchObject({
      code: 'SELF_RESPONSE',
      retryable: false,
    });
    const escalated = await agent.call<{ proposal: Proposal }>('escalate', { proposal_id: p.proposal_id, reason: 'needs a human' });
    expect(escalated.proposal.status).toBe('escalated');
    expect(
      await agent.refusal('challenge', {
        proposal_id: p.proposal_id,
        participant_id: 'agent-z',
        confidence: 0.5,
        domain_authority: 0.5,
        trust_score: 0.5,
      }),
    ).toMatchObject({
      code: 'PROPOSAL_NOT_PENDING',
    });
    expect(await agent.refusal('get_proposal', { proposal_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' })).toMatchObject({
      code: 'PROPOSAL_NOT_FOUND',
    });
    // Arguments outside the wire schema are refused before anything is sent.
    expect(await agent.refusal('endorse', { proposal_id: p.proposal_id, confidence: 1.5 })).toMatchObject({ code: 'SCHEMA_VIOLATION' });
    expect(await agent.refusal('propose', { domain: 'ops.mcp', payload: {}, quorum: 0 })).toMatchObject({ code: 'SCHEMA_VIOLATION' });
    // And the service's own checks come back with its code and field.
    const bad = await agent.refusal('propose', { domain: 'ops..mcp', payload: {}, quorum: 1 });
    expect(bad).toMatchObject({ code: 'SCHEMA_VIOLATION', field: 'domain' });

    const { proposals } = await agent.call<{ proposals: Proposal[] }>('list_proposals', { domain: 'ops.mcp', status: 'escalated' });
    expect(proposals.map((x) => x.proposal_id)).toEqual([p.proposal_id]);
  });

  it('wait_for_decision on a proposal nobody votes on ends at its timeout, reporting it still pending', async () => {
    const p = await propose({ domain: 'ops.quiet', payload: { action: 'noop' }, quorum: 2 });
    expect(await waitFor(p.proposal_id, { timeout_ms: 200 })).toMatchObject({
      decided: false,
      timed_out: true,
      decision: null,
      proposal: { status: 'pending' },
    });
  });

  it('explain_decision names the domain policy document, its custom quorum policy and weight function', async () => {
    const document = {
      schema_version: '1.0',
      domain: 'ops.policy',
      version: 1,
      weight_function: { kind: 'product', exponents: { domain_authority: 1, confidence: 2, trust_score: 1 } },
      quorum_policies: [{ kind: 'lead-signs', required_participants: ['lead'] }],
    };
    await h.client.call(POLICY_PATTERNS.set, { policy: document });
    const p = await propose({ domain: 'ops.policy', payload: { action: 'rotate' }, quorum: 1, quorum_policy: { kind: 'lead-signs' } });
    await agent.call('endorse', {
      proposal_id: p.proposal_id,
      participant_id: 'other',
      confidence: 0.5,
      domain_authority: 1,
      trust_score: 1,
    });
    expect((await waitFor(p.proposal_id, { timeout_ms: 200 })).timed_out).toBe(true);
    await agent.call('endorse', {
      proposal_id: p.proposal_id,
      participant_id: 'lead',
      confidence: 0.5,
      domain_authority: 1,
      trust_score: 1,
    });
    expect((await waitFor(p.proposal_id)).decision).toMatchObject({ outcome: 'approved', policy: { domain: 'ops.policy', version: 1 } });
    const why = await agent.call<Record<string, unknown>>('explain_decision', { proposal_id: p.proposal_id });
    expect(why).toMatchObject({
      votes_for: 0.5,
      quorum_policy: { kind: 'lead-signs', definition: { kind: 'lead-signs', required_participants: ['lead'] } },
      policy: { domain: 'ops.policy', version: 1, document },
      weight_function: document.weight_function,
      // confidence squared: 0.25 each.
      responses: [
        { participant_id: 'other', weight: 0.25 },
        { participant_id: 'lead', weight: 0.25 },
      ],
    });
  });

  it('an agent that cannot read the decisions stream still waits: it follows the proposal instead (decision null, resolution on the proposal)', async () => {
    // No ACP_DECISIONS stream under this suffix: as for an agent whose NATS user may not read it.
    const blind = await httpAgent({ ...h.env, CONCLAVE_PARTICIPANT: 'agent-blind', CONCLAVE_STREAM_SUFFIX: `${h.run}_NONE` });
    try {
      const p = await propose({ domain: 'risk.blind', payload: { action: 'x' }, quorum: 1 });
      const waiting = blind.call<Decided>('wait_for_decision', { proposal_id: p.proposal_id, timeout_ms: 15_000 });
      await agent.call('challenge', {
        proposal_id: p.proposal_id,
        participant_id: 'agent-c',
        confidence: 0.9,
        domain_authority: 0.9,
        trust_score: 0.9,
      });
      const waited = await waiting;
      expect(waited).toMatchObject({
        decided: true,
        timed_out: false,
        decision: null,
        proposal: { status: 'resolved', resolution: { outcome: 'rejected', trigger: 'quorum' } },
      });
      const pending = await propose({ domain: 'risk.blind', payload: { action: 'y' }, quorum: 2 });
      expect(await blind.call<Decided>('wait_for_decision', { proposal_id: pending.proposal_id, timeout_ms: 300 })).toMatchObject({
        decided: false,
        timed_out: true,
        proposal: { status: 'pending' },
      });
    } finally {
      await blind.close();
    }
  });

  it('the same tools over streamable HTTP: a proposal made over stdio is decided by a vote over HTTP', async () => {
    const http = await httpAgent({ ...h.env, CONCLAVE_PARTICIPANT: 'agent-http' });
    try {
      const p = await propose({ domain: 'risk.http', payload: { action: 'approve' }, quorum: 1 });
      await http.call('endorse', { proposal_id: p.proposal_id, confidence: 0.9, domain_authority: 0.9, trust_score: 0.9 });
      const { decision } = await http.call<Decided>('wait_for_decision', { proposal_id: p.proposal_id, timeout_ms: 15_000 });
      expect(decision).toMatchObject({ outcome: 'approved', trigger: 'quorum', votes_for: 0.729 });
      const seen = await agent.call<{ proposal: { responses: Array<{ participant_id: string }> } }>('get_proposal', {
        proposal_id: p.proposal_id,
      });
      expect(seen.proposal.responses.map((r) => r.participant_id)).toEqual(['agent-http']);
    } finally {
      await http.close();
    }
  });
});
