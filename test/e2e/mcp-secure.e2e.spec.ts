import { generateParticipantKeys } from '@conclave/sdk';
import { SecureConclaveHarness } from '../support/conclave-harness';
import { httpAgent, keyFile, McpAgent } from '../support/mcp-client';

type Proposal = {
  proposal_id: string;
  status: string;
  payload_hash?: string;
  responses: Array<{ domain_authority: number; trust_score: number; weight: number }>;
};

/**
 * The MCP server with authentication required (CONCLAVE_AUTH_MODE=required): each agent runs its
 * own MCP server on streamable HTTP holding its own Ed25519 key (CONCLAVE_KEY_FILE), so every
 * command it sends is signed as that agent; factors come from the registry. Written as an
 * attacker too: impersonation, a server without a key, a caller without the HTTP token.
 */
describe('MCP server over streamable HTTP with authentication required', () => {
  const h = new SecureConclaveHarness();
  const agents = new Map<string, McpAgent>();
  const files: Array<{ remove(): void }> = [];
  const TOKEN = 'mcp-token-of-agent-a-3f9c1d';

  async function agentFor(participant: string, extra: Record<string, string> = {}): Promise<McpAgent> {
    const file = keyFile(h.keys.get(participant)!.privateKeyPem);
    files.push(file);
    const agent = await httpAgent({ ...h.env, CONCLAVE_PARTICIPANT: participant, CONCLAVE_KEY_FILE: file.path, ...extra });
    agents.set(participant, agent);
    return agent;
  }

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'sweeper');
    await h.seed([
      { participant_id: 'agent-risk-001', grants: [{ domain: 'risk', domain_authority: 0.5, trust_score: 0.5, actions: ['propose'] }] },
      { participant_id: 'agent-a', grants: [{ domain: 'risk.credit', domain_authority: 0.9, trust_score: 0.9 }] },
      { participant_id: 'agent-b', grants: [{ domain: 'risk.credit', domain_authority: 0.8, trust_score: 0.85 }] },
    ]);
    await agentFor('agent-risk-001');
    await agentFor('agent-a', { CONCLAVE_MCP_HTTP_TOKEN: TOKEN });
    await agentFor('agent-b');
  }, 60_000);
  afterAll(async () => {
    for (const a of agents.values()) await a.close();
    files.forEach((f) => f.remove());
    await h.stop();
  });

  it('C.1 through three signed MCP servers: factors stamped from the registry, APPROVED with votes_for 1.1645', async () => {
    const { proposal: p } = await agents
      .get('agent-risk-001')!
      .call<{ proposal: Proposal }>('propose', { domain: 'risk.credit', payload: { action: 'approve_loan' }, quorum: 2 });
    expect(p.payload_hash).toMatch(/^[0-9a-f]{64}$/);
    await agents.get('agent-a')!.call('endorse', { proposal_id: p.proposal_id, confidence: 0.85 });
    await agents.get('agent-b')!.call('endorse', { proposal_id: p.proposal_id, confidence: 0.7 });
    const waited = await agents
      .get('agent-risk-001')!
      .call<{ decision: Record<string, unknown>; proposal: Proposal }>('wait_for_decision', {
        proposal_id: p.proposal_id,
        timeout_ms: 15_000,
      });
    expect(waited.decision).toMatchObject({ outcome: 'approved', trigger: 'quorum', votes_for: 1.1645, votes_against: 0 });
    expect(waited.proposal.responses.map((r) => [r.domain_authority, r.trust_score, r.weight])).toEqual([
      [0.9, 0.9, 0.6885],
      [0.8, 0.85, 0.476],
    ]);
    const why = await agents.get('agent-b')!.call<{ responses: Array<{ participant_id: string; weight: number }> }>('explain_decision', {
      proposal_id: p.proposal_id,
    });
    expect(why.responses.map((r) => [r.participant_id, r.weight])).toEqual([
      ['agent-a', 0.6885],
      ['agent-b', 0.476],
    ]);
  });

  it("an attacker's MCP call as another participant is FORBIDDEN on participant_id (signed as itself)", async () => {
    const { proposal: p } = await agents
      .get('agent-risk-001')!
      .call<{ proposal: Proposal }>('propose', { domain: 'risk.credit', payload: { action: 'x' }, quorum: 2 });
    expect(
      await agents.get('agent-b')!.refusal('endorse', { proposal_id: p.proposal_id, participant_id: 'agent-a', confidence: 1 }),
    ).toMatchObject({
      code: 'FORBIDDEN',
      field: 'participant_id',
    });
    // Declaring a higher authority than the registry grants is refused, not believed.
    expect(
      await agents.get('agent-b')!.refusal('endorse', { proposal_id: p.proposal_id, confidence: 1, domain_authority: 1 }),
    ).toMatchObject({
      code: 'FORBIDDEN',
      field: 'domain_authority',
    });
  });

  it('an MCP server holding the wrong key, or none, gets UNAUTHENTICATED for every command', async () => {
    const wrong = keyFile(generateParticipantKeys().privateKeyPem);
    files.push(wrong);
    const forger = await httpAgent({ ...h.env, CONCLAVE_PARTICIPANT: 'agent-risk-001', CONCLAVE_KEY_FILE: wrong.path });
    const unsigned = await httpAgent({ ...h.env, CONCLAVE_PARTICIPANT: 'agent-risk-001' });
    try {
      expect(await forger.refusal('propose', { domain: 'risk.credit', payload: { action: 'y' }, quorum: 1 })).toMatchObject({
        code: 'UNAUTHENTICATED',
      });
      expect(await unsigned.refusal('propose', { domain: 'risk.credit', payload: { action: 'y' }, quorum: 1 })).toMatchObject({
        code: 'UNAUTHENTICATED',
      });
    } finally {
      await forger.close();
      await unsigned.close();
    }
  });

  it('an HTTP caller without the bearer token (or with a wrong one) is refused with 401 before any tool runs', async () => {
    const url = (agents.get('agent-a') as McpAgent & { url: URL }).url;
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_proposals', arguments: {} } });
    const post = (authorization?: string) =>
      fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(authorization ? { authorization } : {}),
        },
        body,
      });
    expect((await post()).status).toBe(401);
    expect((await post('Bearer not-the-token')).status).toBe(401);
    expect((await post(`Bearer ${TOKEN}`)).status).toBe(200);
  });

  it('a request whose Host is not the loopback name it listens on (DNS rebinding) is refused', async () => {
    const url = (agents.get('agent-b') as McpAgent & { url: URL }).url;
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { host: 'evil.example:80', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        },
        (res) => resolve(res.statusCode ?? 0),
      );
      req.on('error', reject);
      req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }));
    });
    expect(status).toBe(403);
  });
});
