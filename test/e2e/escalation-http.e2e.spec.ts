import { INestApplication } from '@nestjs/common';
import { proposalStream } from '@conclave/acp-protocol';
import type { EventLog } from '@conclave/event-log';
import { ConclaveClient } from '@conclave/sdk';
import { EVENT_LOG, loadConfig } from '@conclave/service-kit';
import { EscalationConfig } from '../../apps/escalation/src/app/escalation.config';
import { startEscalation } from '../../apps/escalation/src/app/escalation.app';
import { OPENAPI_DOCUMENT } from '../../apps/escalation/src/app/openapi';
import { ConclaveHarness, eventually } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

const TOKENS = { 'tok-pricing-lead-0001': 'human-pricing-lead', 'tok-analyst-00000002': 'human-analyst' };
const now = () => new Date().toISOString();
const F = { domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 };

/**
 * Appendix C.4 end to end through the HTTP API, with human resolver tokens enforced
 * (CONCLAVE_AUTH_MODE=required on the escalation service; the agents' intake runs with auth off
 * here because its signed-request authentication is another issue's subject).
 */
describe('escalation HTTP API (list, read, resolve, OpenAPI) with human resolver tokens', () => {
  const h = new ConclaveHarness();
  let decisions: DecisionCollector;
  let escalation: INestApplication;
  let base: string;

  beforeAll(async () => {
    await h.start('intake', 'resolver');
    escalation = await startEscalation(
      loadConfig(EscalationConfig, { ...h.env, CONCLAVE_AUTH_MODE: 'required', CONCLAVE_HUMAN_TOKENS: JSON.stringify(TOKENS) }),
    );
    h.instances.push({ name: 'escalation', app: escalation });
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
    const p = await h.client.propose({ domain: 'strategy.pricing', author: 'agent-pricing', payload: { action: 'raise_price' }, quorum: 2, created_at: now() });
    await h.client.endorse(p.proposal_id, { participant_id: 'agent-a', ...F, reason: 'demand is inelastic' });
    await h.client.challenge(p.proposal_id, { participant_id: 'agent-b', ...F, reason: 'competitors hold prices' });
    await decisions.waitFor(p.proposal_id);
    return p.proposal_id;
  }

  it('C.4 given a tie, when the pricing lead lists, reads and approves it over HTTP with a token, then the decision follows with who and why', async () => {
    const id = await tie();
    const listed = await eventually(async () => {
      const { body } = await http('/escalations');
      return (body['escalations'] as Array<{ proposal_id: string }>).find((e) => e.proposal_id === id);
    });
    expect(listed).toMatchObject({ status: 'open', escalation: { reason: 'tie' } });

    const { status, body: detail } = await http(`/escalations/${id}`);
    expect(status).toBe(200);
    expect(detail).toMatchObject({ ok: true, votes: { for: 0.648, against: 0.648, responses: 2 }, proposal: { status: 'escalated', payload: { action: 'raise_price' } } });
    expect(detail['proposal'].responses).toEqual([
      expect.objectContaining({ participant_id: 'agent-a', response_type: 'endorse', weight: 0.648, reason: 'demand is inelastic' }),
      expect.objectContaining({ participant_id: 'agent-b', response_type: 'challenge', weight: 0.648, reason: 'competitors hold prices' }),
    ]);

    const resolved = await http(`/escalations/${id}/resolve`, {
      method: 'POST',
      token: 'tok-pricing-lead-0001',
      body: JSON.stringify({ outcome: 'approved', note: 'Pricing change approved after review', ...detail['binding'] }),
    });
    expect(resolved).toMatchObject({ status: 200, body: { ok: true, proposal: { status: 'resolved', resolution: { outcome: 'approved', trigger: 'manual', resolved_by: 'human-pricing-lead' } } } });
    const [, d] = await decisions.waitFor(id, 2);
    expect(d).toMatchObject({ outcome: 'approved', trigger: 'manual', resolved_by: 'human-pricing-lead', note: 'Pricing change approved after review' });

    const again = await http(`/escalations/${id}/resolve`, { method: 'POST', token: 'tok-pricing-lead-0001', body: JSON.stringify({ outcome: 'rejected', note: 'again' }) });
    expect(again).toMatchObject({ status: 409, body: { ok: false, error: { code: 'NOT_ESCALATED' } } });
  });

  it('given an open escalation, when the token is missing, wrong, or someone else\'s, then 401/403 and nothing changes', async () => {
    const id = await tie();
    await eventually(async () => (await h.client.escalation(id)).escalation.routed || undefined, 10_000, 'routed');
    const before = await events(id);
    const body = (extra: object = {}) => JSON.stringify({ outcome: 'approved', note: 'trust me', ...extra });
    expect(await http(`/escalations/${id}/resolve`, { method: 'POST', body: body() })).toMatchObject({ status: 401, body: { error: { code: 'UNAUTHENTICATED' } } });
    expect(await http(`/escalations/${id}/resolve`, { method: 'POST', token: 'not-a-real-token', body: body() })).toMatchObject({ status: 401, body: { error: { code: 'UNAUTHENTICATED' } } });
    expect(await http(`/escalations/${id}/resolve`, { method: 'POST', token: 'tok-analyst-00000002', body: body({ resolved_by: 'human-pricing-lead' }) })).toMatchObject({
      status: 403,
      body: { error: { code: 'FORBIDDEN', field: 'resolved_by' } },
    });
    expect(await http(`/escalations/${id}/resolve`, { method: 'POST', token: 'tok-analyst-00000002', body: JSON.stringify({ outcome: 'approved' }) })).toMatchObject({
      status: 400,
      body: { error: { code: 'SCHEMA_VIOLATION', field: 'note' } },
    });
    expect(await events(id)).toBe(before);
    expect((await h.client.get(id)).status).toBe('escalated');
    expect(decisions.for(id)).toHaveLength(1);
  });

  it('given auth required, when acp.v1.resolve comes without a token or with a wrong one, then UNAUTHENTICATED; with the token in the Authorization header it resolves', async () => {
    const id = await tie();
    await expect(h.client.resolve(id, { outcome: 'rejected', resolved_by: 'human-analyst', note: 'n' })).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    const wrong = await ConclaveClient.connect({ nc: h.nc, prefix: h.prefix, streamSuffix: h.run, sign: () => ({ Authorization: 'Bearer nope-nope-nope' }) });
    await expect(wrong.resolve(id, { outcome: 'rejected', note: 'n' })).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await h.client.get(id)).status).toBe('escalated');
    const analyst = await ConclaveClient.connect({ nc: h.nc, prefix: h.prefix, streamSuffix: h.run, sign: () => ({ Authorization: 'Bearer tok-analyst-00000002' }) });
    const p = await analyst.resolve(id, { outcome: 'rejected', note: 'too risky' });
    expect(p.resolution).toMatchObject({ outcome: 'rejected', resolved_by: 'human-analyst' });
  });

  it('reading: 404 for an unknown proposal, 409 NOT_ESCALATED for one never escalated, 400 for a bad id or filter', async () => {
    const p = await h.client.propose({ domain: 'strategy.pricing', author: 'agent-pricing', payload: {}, quorum: 5, created_at: now() });
    expect(await http('/escalations/01ARZ3NDEKTSV4RRFFQ69G5FAV')).toMatchObject({ status: 404, body: { error: { code: 'PROPOSAL_NOT_FOUND' } } });
    expect(await http(`/escalations/${p.proposal_id}`)).toMatchObject({ status: 409, body: { error: { code: 'NOT_ESCALATED' } } });
    expect(await http('/escalations/nope')).toMatchObject({ status: 400, body: { error: { code: 'INVALID_ID' } } });
    expect(await http('/escalations?status=maybe')).toMatchObject({ status: 400, body: { error: { code: 'SCHEMA_VIOLATION', field: 'status' } } });
  });

  it('GET /openapi.json serves the OpenAPI document describing every route above', async () => {
    const { status, body } = await http('/openapi.json');
    expect(status).toBe(200);
    expect(body).toEqual(JSON.parse(JSON.stringify(OPENAPI_DOCUMENT)));
    expect(body['openapi']).toBe('3.1.0');
    expect(Object.keys(body['paths'])).toEqual(expect.arrayContaining(['/escalations', '/escalations/{proposal_id}', '/escalations/{proposal_id}/resolve', '/console/decisions']));
    expect(body['paths']['/escalations/{proposal_id}/resolve'].post.responses).toHaveProperty('401');
  });
});
