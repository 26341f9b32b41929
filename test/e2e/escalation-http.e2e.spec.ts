import { INestApplication } from '@nestjs/common';
import { proposalStream } from '@conclave/acp-protocol';
import type { EventLog } from '@conclave/event-log';
import { ConclaveClient } from '@conclave/sdk';
import { EVENT_LOG } from '@conclave/service-kit';
import { OPENAPI_DOCUMENT } from '../../apps/escalation/src/app/openapi';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

// Tokens only name registered participants, and must be 32 characters or more.
const LEAD_TOKEN = 'pricing-lead-token-0123456789abcdefghij';
const ANALYST_TOKEN = 'analyst-token-0123456789abcdefghijklmno';
const OUTSIDER_TOKEN = 'outsider-token-0123456789abcdefghijklmn';
const TOKENS = { [LEAD_TOKEN]: 'human-pricing-lead', [ANALYST_TOKEN]: 'human-analyst', [OUTSIDER_TOKEN]: 'human-ops' };
const now = () => new Date().toISOString();
// The registry stamps domain_authority and trust_score; the response declares its confidence.
const GRANT = { domain: 'strategy.pricing', domain_authority: 0.9, trust_score: 0.9 };
const RESOLVER_GRANT = { domain: 'strategy.pricing', domain_authority: 1, trust_score: 1, actions: ['resolve'] };

/**
 * Appendix C.4 end to end through the HTTP API with authentication required everywhere: the
 * agents sign their commands, the people are registered human resolvers whose bearer tokens
 * name them, and every read needs credentials.
 */
describe('escalation HTTP API (list, read, resolve, OpenAPI) with registered human resolvers', () => {
  const h = new SecureConclaveHarness({ CONCLAVE_HUMAN_TOKENS: JSON.stringify(TOKENS) });
  let decisions: DecisionCollector;
  let escalation: INestApplication;
  let base: string;
  let pricing: ConclaveClient;
  let agentA: ConclaveClient;
  let agentB: ConclaveClient;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'escalation');
    await h.seed([
      { participant_id: 'agent-pricing', grants: [GRANT] },
      { participant_id: 'agent-a', grants: [GRANT] },
      { participant_id: 'agent-b', grants: [GRANT] },
      { participant_id: 'human-pricing-lead', roles: ['human-resolver'], grants: [RESOLVER_GRANT] },
      { participant_id: 'human-analyst', roles: ['human-resolver'], grants: [RESOLVER_GRANT] },
      { participant_id: 'human-ops', roles: ['human-resolver'], grants: [{ ...RESOLVER_GRANT, domain: 'ops' }] },
    ]);
    [pricing, agentA, agentB] = await Promise.all(['agent-pricing', 'agent-a', 'agent-b'].map((id) => h.clientFor(id)));
    escalation = h.instances.find((i) => i.name === 'escalation')!.app;
    base = (await escalation.getUrl()).replace('[::1]', '127.0.0.1');
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  const http = async (path: string, init: RequestInit & { token?: string } = {}) => {
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (init.token) headers['Authorization'] = `Bearer ${init.token}`;
    const res = await fetch(base + path, { ...init, headers });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };
  const events = async (id: string) => (await escalation.get<EventLog>(EVENT_LOG).read(proposalStream(id))).events.length;

  async function tie() {
    const p = await pricing.propose({
      domain: 'strategy.pricing',
      author: 'agent-pricing',
      payload: { action: 'raise_price' },
      quorum: 2,
      created_at: now(),
    });
    await agentA.endorse(p.proposal_id, { participant_id: 'agent-a', confidence: 0.8, reason: 'demand is inelastic' });
    await agentB.challenge(p.proposal_id, { participant_id: 'agent-b', confidence: 0.8, reason: 'competitors hold prices' });
    await decisions.waitFor(p.proposal_id);
    return p.proposal_id;
  }

  it('C.4 given a tie, when the pricing lead lists, reads and approves it over HTTP with a token, then the decision follows with who and why', async () => {
    const id = await tie();
    const listed = await eventually(async () => {
      const { body } = await http('/escalations', { token: LEAD_TOKEN });
      return (body['escalations'] as Array<{ proposal_id: string }>).find((e) => e.proposal_id === id);
    });
    expect(listed).toMatchObject({ status: 'open', escalation: { reason: 'tie' } });

    const { status, body: detail } = await http(`/escalations/${id}`, { token: LEAD_TOKEN });
    expect(status).toBe(200);
    expect(detail).toMatchObject({
      ok: true,
      votes: { for: 0.648, against: 0.648, responses: 2 },
      proposal: { status: 'escalated', payload: { action: 'raise_price' } },
    });
    expect(detail['proposal'].responses).toEqual([
      expect.objectContaining({ participant_id: 'agent-a', response_type: 'endorse', weight: 0.648, reason: 'demand is inelastic' }),
      expect.objectContaining({ participant_id: 'agent-b', response_type: 'challenge', weight: 0.648, reason: 'competitors hold prices' }),
    ]);

    const resolved = await http(`/escalations/${id}/resolve`, {
      method: 'POST',
      token: LEAD_TOKEN,
      body: JSON.stringify({ outcome: 'approved', note: 'Pricing change approved after review', ...detail['binding'] }),
    });
    expect(resolved).toMatchObject({
      status: 200,
      body: {
        ok: true,
        proposal: { status: 'resolved', resolution: { outcome: 'approved', trigger: 'manual', resolved_by: 'human-pricing-lead' } },
      },
    });
    const [, d] = await decisions.waitFor(id, 2);
    expect(d).toMatchObject({
      outcome: 'approved',
      trigger: 'manual',
      resolved_by: 'human-pricing-lead',
      note: 'Pricing change approved after review',
    });

    const again = await http(`/escalations/${id}/resolve`, {
      method: 'POST',
      token: LEAD_TOKEN,
      body: JSON.stringify({ outcome: 'rejected', note: 'again' }),
    });
    expect(again).toMatchObject({ status: 409, body: { ok: false, error: { code: 'NOT_ESCALATED' } } });
  });

  it("given an open escalation, when the token is missing, wrong, someone else's or of another domain, then 401/403/400 and nothing changes", async () => {
    const id = await tie();
    await eventually(async () => (await pricing.escalation(id)).escalation.routed || undefined, 10_000, 'routed');
    const before = await events(id);
    const body = (extra: object = {}) => JSON.stringify({ outcome: 'approved', note: 'trust me', ...extra });
    expect(await http(`/escalations/${id}/resolve`, { method: 'POST', body: body() })).toMatchObject({
      status: 401,
      body: { error: { code: 'UNAUTHENTICATED' } },
    });
    expect(
      await http(`/escalations/${id}/resolve`, { method: 'POST', token: 'not-a-real-token-0123456789abcdefghijkl', body: body() }),
    ).toMatchObject({
      status: 401,
      body: { error: { code: 'UNAUTHENTICATED' } },
    });
    expect(
      await http(`/escalations/${id}/resolve`, { method: 'POST', token: ANALYST_TOKEN, body: body({ resolved_by: 'human-pricing-lead' }) }),
    ).toMatchObject({
      status: 403,
      body: { error: { code: 'FORBIDDEN', field: 'resolved_by' } },
    });
    expect(await http(`/escalations/${id}/resolve`, { method: 'POST', token: OUTSIDER_TOKEN, body: body() })).toMatchObject({
      status: 403,
      body: { error: { code: 'FORBIDDEN', field: 'domain' } },
    });
    expect(
      await http(`/escalations/${id}/resolve`, { method: 'POST', token: ANALYST_TOKEN, body: JSON.stringify({ outcome: 'approved' }) }),
    ).toMatchObject({
      status: 400,
      body: { error: { code: 'SCHEMA_VIOLATION', field: 'note' } },
    });
    expect(await events(id)).toBe(before);
    expect((await pricing.get(id)).status).toBe('escalated');
    expect(decisions.for(id)).toHaveLength(1);
  });

  it("given auth required, when acp.v1.resolve comes unsigned or with a wrong token, then UNAUTHENTICATED; with a registered resolver's token in the Authorization header it resolves", async () => {
    const id = await tie();
    await expect(h.client.resolve(id, { outcome: 'rejected', resolved_by: 'human-analyst', note: 'n' })).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
    const wrong = await ConclaveClient.connect({
      nc: h.nc,
      prefix: h.prefix,
      streamSuffix: h.run,
      sign: () => ({ Authorization: 'Bearer wrong-token-0123456789abcdefghijklmnopq' }),
    });
    await expect(wrong.resolve(id, { outcome: 'rejected', note: 'n' })).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await pricing.get(id)).status).toBe('escalated');
    const analyst = await ConclaveClient.connect({
      nc: h.nc,
      prefix: h.prefix,
      streamSuffix: h.run,
      sign: () => ({ Authorization: `Bearer ${ANALYST_TOKEN}` }),
    });
    const p = await analyst.resolve(id, { outcome: 'rejected', note: 'too risky' });
    expect(p.resolution).toMatchObject({ outcome: 'rejected', resolved_by: 'human-analyst' });
  });

  it('reading with a token: 404 for an unknown proposal, 409 NOT_ESCALATED for one never escalated, 400 for a bad id or filter; without one: 401', async () => {
    const p = await pricing.propose({ domain: 'strategy.pricing', author: 'agent-pricing', payload: {}, quorum: 5, created_at: now() });
    const read = (path: string) => http(path, { token: LEAD_TOKEN });
    expect(await read('/escalations/01ARZ3NDEKTSV4RRFFQ69G5FAV')).toMatchObject({
      status: 404,
      body: { error: { code: 'PROPOSAL_NOT_FOUND' } },
    });
    expect(await read(`/escalations/${p.proposal_id}`)).toMatchObject({ status: 409, body: { error: { code: 'NOT_ESCALATED' } } });
    expect(await read('/escalations/nope')).toMatchObject({ status: 400, body: { error: { code: 'INVALID_ID' } } });
    expect(await read('/escalations?status=maybe')).toMatchObject({
      status: 400,
      body: { error: { code: 'SCHEMA_VIOLATION', field: 'status' } },
    });
    expect(await http(`/escalations/${p.proposal_id}`)).toMatchObject({ status: 401, body: { error: { code: 'UNAUTHENTICATED' } } });
  });

  it('GET /openapi.json serves the OpenAPI document describing every route above', async () => {
    const { status, body } = await http('/openapi.json');
    expect(status).toBe(200);
    expect(body).toEqual(JSON.parse(JSON.stringify(OPENAPI_DOCUMENT)));
    expect(body['openapi']).toBe('3.1.0');
    expect(Object.keys(body['paths'])).toEqual(
      expect.arrayContaining(['/escalations', '/escalations/{proposal_id}', '/escalations/{proposal_id}/resolve', '/console/decisions']),
    );
    expect(body['paths']['/escalations/{proposal_id}/resolve'].post.responses).toHaveProperty('401');
    expect(body['paths']['/escalations'].get.responses).toHaveProperty('401');
  });
});
