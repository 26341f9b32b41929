import { proposalStream } from '@conclave/acp-protocol';
import type { EventLog } from '@conclave/event-log';
import { EVENT_LOG } from '@conclave/service-kit';
import { acpStreamNames } from '@conclave/messaging';
import { ConclaveError } from '@conclave/sdk';
import { AckPolicy, DeliverPolicy } from 'nats';
import { ConclaveHarness, eventually } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

const ROUTES = [{ id: 'pricing', domain_prefix: 'strategy', assignees: ['human-pricing-lead'] }];
const now = () => new Date().toISOString();
const tieVotes = { domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 };

/**
 * RFC 10 / Appendix C.4 end to end over NATS: a tie escalates, the escalation service takes it
 * (routes it to the domain's human), and a human resolution over `acp.v1.resolve` yields the
 * decision. Errors change nothing.
 */
describe('escalation service over NATS (acp.v1.resolve, inbox queries, notifications)', () => {
  const h = new ConclaveHarness({ CONCLAVE_ESCALATION_ROUTES: JSON.stringify(ROUTES) });
  let decisions: DecisionCollector;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'escalation');
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  async function tie(domain = 'strategy.pricing') {
    const p = await h.client.propose({
      domain,
      author: 'agent-pricing',
      payload: { action: 'raise_price', pct: 5 },
      quorum: 2,
      created_at: now(),
    });
    await h.client.endorse(p.proposal_id, { participant_id: 'agent-a', ...tieVotes, reason: 'margin is thin' });
    await h.client.challenge(p.proposal_id, { participant_id: 'agent-b', ...tieVotes, reason: 'churn risk' });
    await decisions.waitFor(p.proposal_id, 1);
    return p.proposal_id;
  }

  /** The inbox entry once the desk has routed it. */
  const routed = (id: string) =>
    eventually(
      async () => (await h.client.escalations({ status: 'all' })).find((e) => e.proposal_id === id && e.routed),
      10_000,
      `${id} routed`,
    );

  /** Events on the proposal's stream, read from the log itself. */
  const events = async (id: string) => (await h.instances[0].app.get<EventLog>(EVENT_LOG).read(proposalStream(id))).events.length;

  it('C.4 given a tie escalated by quorum, when the pricing lead resolves it over NATS, then APPROVED with trigger MANUAL, who and why', async () => {
    const id = await tie();
    const [escalated] = decisions.for(id);
    expect(escalated).toMatchObject({
      outcome: 'escalated',
      trigger: 'quorum',
      votes_for: 0.648,
      votes_against: 0.648,
      escalation: { reason: 'tie' },
    });

    const entry = await routed(id);
    expect(entry).toMatchObject({
      status: 'open',
      domain: 'strategy.pricing',
      assignees: ['human-pricing-lead'],
      route_id: 'pricing',
      escalation: { reason: 'tie' },
    });
    const view = await h.client.escalation(id);
    expect(view.proposal.responses.map((r) => [r.participant_id, r.weight, r.reason])).toEqual([
      ['agent-a', 0.648, 'margin is thin'],
      ['agent-b', 0.648, 'churn risk'],
    ]);
    expect(view.binding).toEqual({ escalation_id: escalated.event_id, payload_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });

    const proposal = await h.client.resolve(id, {
      outcome: 'approved',
      resolved_by: 'human-pricing-lead',
      note: 'Pricing change approved after review',
      ...view.binding,
    });
    expect(proposal).toMatchObject({
      status: 'resolved',
      resolution: { outcome: 'approved', trigger: 'manual', resolved_by: 'human-pricing-lead' },
    });
    const [, human] = await decisions.waitFor(id, 2);
    expect(human).toMatchObject({
      outcome: 'approved',
      trigger: 'manual',
      resolved_by: 'human-pricing-lead',
      note: 'Pricing change approved after review',
      escalation: { reason: 'tie' },
    });
    expect(
      await eventually(async () => (await h.client.escalations({ status: 'resolved' })).find((e) => e.proposal_id === id)),
    ).toMatchObject({ status: 'resolved' });
  });

  it('given a resolved escalation, when resolved a second time, then NOT_ESCALATED and nothing is appended or published', async () => {
    const id = await tie();
    await routed(id);
    await h.client.resolve(id, { outcome: 'rejected', resolved_by: 'human-pricing-lead', note: 'no' });
    await decisions.waitFor(id, 2);
    const before = await events(id);
    await expect(
      h.client.resolve(id, { outcome: 'approved', resolved_by: 'human-pricing-lead', note: 'changed my mind' }),
    ).rejects.toMatchObject({ code: 'NOT_ESCALATED' });
    expect(await events(id)).toBe(before);
    expect((await h.client.get(id)).resolution).toMatchObject({ outcome: 'rejected' });
    expect(decisions.for(id)).toHaveLength(2);
  });

  it('given a pending proposal, when someone resolves it, then NOT_ESCALATED and nothing changes', async () => {
    const p = await h.client.propose({
      domain: 'strategy.pricing',
      author: 'agent-pricing',
      payload: { x: 1 },
      quorum: 3,
      created_at: now(),
    });
    const before = await events(p.proposal_id);
    const err = await h.client.resolve(p.proposal_id, { outcome: 'approved', resolved_by: 'human-x', note: 'n' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConclaveError);
    expect(err).toMatchObject({ code: 'NOT_ESCALATED' });
    expect(await events(p.proposal_id)).toBe(before);
    expect((await h.client.get(p.proposal_id)).status).toBe('pending');
  });

  it('given an open escalation, when the resolution names another escalation or another payload hash, then refused and nothing changes', async () => {
    const id = await tie();
    const { binding } = await h.client.escalation(id);
    await routed(id);
    const before = await events(id);
    await expect(
      h.client.resolve(id, { outcome: 'approved', resolved_by: 'h', note: 'n', escalation_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' }),
    ).rejects.toMatchObject({ code: 'NOT_ESCALATED', field: 'escalation_id' });
    await expect(
      h.client.resolve(id, {
        outcome: 'approved',
        resolved_by: 'h',
        note: 'n',
        escalation_id: binding.escalation_id,
        payload_hash: '0'.repeat(64),
      }),
    ).rejects.toMatchObject({ code: 'CONFLICT', field: 'payload_hash' });
    expect(await events(id)).toBe(before);
    expect((await h.client.get(id)).status).toBe('escalated');
  });

  it('given an escalation, then the assignment goes out on <prefix>.v1.escalations.<domain> with Nats-Msg-Id = event id', async () => {
    const id = await tie('strategy.discounts');
    await routed(id);
    const stream = acpStreamNames(h.run).escalations;
    const jsm = await h.nc.jetstreamManager();
    const ci = await jsm.consumers.add(stream, {
      ack_policy: AckPolicy.None,
      deliver_policy: DeliverPolicy.All,
      filter_subject: `${h.prefix}.v1.escalations.strategy.discounts`,
    });
    const consumer = await h.nc.jetstream().consumers.get(stream, ci.name);
    const seen: Array<{ body: Record<string, unknown>; msgId?: string }> = [];
    const messages = await consumer.consume();
    for await (const m of messages) {
      seen.push({ body: m.json<Record<string, unknown>>(), msgId: m.headers?.get('Nats-Msg-Id') });
      if (seen.some((s) => s.body['notification'] === 'assigned')) break;
    }
    const assigned = seen.find((s) => s.body['notification'] === 'assigned')!;
    expect(assigned.body).toMatchObject({
      proposal_id: id,
      domain: 'strategy.discounts',
      event_type: 'EscalationRouted',
      routing: { assignees: ['human-pricing-lead'] },
    });
    expect(assigned.msgId).toBe(assigned.body['event_id']);
    // the escalation itself, published by the resolver's outbox with its decision event
    expect(seen.some((s) => (s.body['decision'] as { proposal_id?: string } | undefined)?.proposal_id === id)).toBe(true);
    await jsm.consumers.delete(stream, ci.name);
  });
});
